// Package internal_test holds the house's rules: which wing may link which,
// each with its reason, for production code and for tests alike (in the
// manner of tailscale's tstest/deptest). A rule names the packages it
// governs by prefix and the dependencies they may not have; `go list -deps`
// (with -test when the rule covers tests) is the evidence.
package internal_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mediagen-dev/mediagen/"

// rule: packages under From (module-relative prefixes) may not link any
// dependency under Banned, except those under Allowed.
type rule struct {
	name    string
	from    []string
	tests   bool // the rule covers the packages' tests too
	banned  []string
	allowed []string
	reason  string
}

var rules = []rule{
	{
		name:   "the core links no AWS, emulator, HTTP layer or test kit",
		from:   []string{"internal/core/"},
		banned: []string{"github.com/aws/", module + "internal/aws/", module + "internal/local/", module + "internal/api/", module + "internal/testkit/", module + "deploy"},
		reason: "the domain and use cases own their ports; they build, test and read without AWS, the emulators or the HTTP layer, so either runtime can wire them",
	},
	{
		name:   "the core's tests never go through a composition root",
		from:   []string{"internal/core/"},
		tests:  true,
		banned: []string{module + "internal/aws/lambdawiring", module + "internal/local/runtime", module + "internal/local/lambdastack", module + "internal/api/", module + "cmd/"},
		reason: "a use case is tested on its ports (over the real protocol servers' adapters), not through the wiring or the HTTP layer, so a wiring change cannot hide a use case's defect",
	},
	{
		name:   "shared adapters link no use case",
		from:   []string{"internal/adapters/"},
		tests:  true,
		banned: []string{module + "internal/core/generation", module + "internal/core/longform", module + "internal/core/job", module + "internal/core/accounts", module + "internal/core/sweeper", module + "internal/core/ledger"},
		reason: "the core's use cases call the adapters through ports they own; an adapter calling back into a use case would make the two one package in two folders (the domain's types, the catalog and routing they translate, and webhook signing are theirs to use)",
	},
	{
		name:   "shared adapters link no AWS and nothing local",
		from:   []string{"internal/adapters/"},
		tests:  true,
		banned: []string{"github.com/aws/", module + "internal/aws/", module + "internal/local/", module + "internal/api/"},
		reason: "the provider client, ffmpeg and the egress guard run the same in both runtimes and are tested against stand-ins that speak their protocols",
	},
	{
		name:    "the HTTP layer links no AWS SDK",
		from:    []string{"internal/api/"},
		banned:  []string{"github.com/aws/aws-sdk-go-v2", module + "internal/aws/", module + "internal/local/", module + "internal/testkit/"},
		allowed: []string{},
		reason:  "routes and views are the same behind API Gateway and the local server; only lambdahttp knows the gateway's event types (aws-lambda-go, not the SDK)",
	},
	{
		name:   "AWS adapters link no emulator",
		from:   []string{"internal/aws/"},
		banned: []string{module + "internal/local/", module + "internal/testkit/", "modernc.org/sqlite"},
		reason: "what ships to Lambda is what runs in AWS: no stand-in, test kit or embedded database in a bootstrap (scripts/build-lambdas.sh refuses one too)",
	},
	{
		name:   "a function links no emulator",
		from:   []string{"functions/"},
		banned: []string{module + "internal/local/", module + "internal/testkit/", "modernc.org/sqlite", module + "deploy"},
		reason: "a bootstrap is only its handler and the AWS adapters; anything more is weight in every cold start",
	},
	{
		name:   "the ASL runner knows nothing of the service",
		from:   []string{"internal/local/stepfunctions"},
		tests:  true,
		banned: []string{module},
		allowed: []string{
			module + "internal/local/stepfunctions",
			module + "internal/testkit/waitfor", // the one way every test waits, standard library only
		},
		reason: "it runs any ASL definition; the long-form workflow's port on it is the adapter local/workflowtokens",
	},
	{
		name:   "the stores' suite judges adapters, not use cases",
		from:   []string{"internal/testkit/storetest"},
		tests:  true,
		banned: []string{module + "internal/core/accounts", module + "internal/core/generation", module + "internal/core/job", module + "internal/core/longform", module + "internal/core/webhook", module + "internal/api/"},
		reason: "it holds a store to the port and the ledger's invariant (core/ledger); a use case can change without the suite that judges the stores",
	},
	{
		name:   "the test kit's waiting is the standard library's",
		from:   []string{"internal/testkit/waitfor", "internal/core/clock"},
		tests:  true,
		banned: []string{module},
		allowed: []string{
			module + "internal/testkit/waitfor",
			module + "internal/core/clock",
			module + "internal/testkit/clocktest",
		},
		reason: "every package's tests link them; what they linked, every test would",
	},
	{
		name:    "the public Go client links no server logic",
		from:    []string{"client"},
		tests:   false,
		banned:  []string{module, "github.com/aws/"},
		allowed: []string{module + "client", module + "internal/api/apiview", module + "internal/core/domain"},
		reason:  "an API client's program imports the wire's views and the domain's types, never the catalog, webhooks, use cases or adapters",
	},
	{
		name:   "the user's CLI links no developer tool",
		from:   []string{"cmd/mediagen"},
		banned: []string{module + "internal/local/lambdastack", module + "internal/local/lambdaruntime", module + "internal/testkit/", module + "cmd/mediagen-dev"},
		reason: "bench, cold starts and the deployed shape on moto are the developers' (cmd/mediagen-dev); the user's binary carries no moto starter, Lambda emulator or test kit (serve reads template.yaml's function timeouts, which the local runtime holds its handlers to, so the template parser stays)",
	},
}

func TestTheWingsKeepTheirRules(t *testing.T) {
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			if r.reason == "" {
				t.Fatal("a rule without a reason")
			}
			for _, from := range r.from {
				for _, pkg := range packagesUnder(t, from) {
					for _, dep := range deps(t, pkg, r.tests) {
						if dep == pkg || strings.HasPrefix(dep, pkg+"_test") || strings.HasPrefix(dep, pkg+".test") {
							continue
						}
						if matches(dep, r.banned) && !matches(dep, r.allowed) {
							t.Errorf("%s links %s (rule: %s — %s)", strings.TrimPrefix(pkg, module), dep, r.name, r.reason)
						}
					}
				}
			}
		})
	}
}

func matches(dep string, prefixes []string) bool {
	for _, p := range prefixes {
		if dep == strings.TrimSuffix(p, "/") || strings.HasPrefix(dep, p) && (strings.HasSuffix(p, "/") || len(dep) == len(p) || dep[len(p)] == '/' || dep[len(p)] == ' ' || dep[len(p)] == '.') {
			return true
		}
	}
	return false
}

// packagesUnder lists the module's packages at or under the prefix.
func packagesUnder(t *testing.T, prefix string) []string {
	t.Helper()
	pattern := "../" + strings.TrimSuffix(prefix, "/") + "/..."
	out, err := exec.Command("go", "list", pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, out)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if prefix == "cmd/mediagen" && p != module+"cmd/mediagen" {
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no package under %s: a rule that governs nothing", prefix)
	}
	return pkgs
}

func deps(t *testing.T, pkg string, tests bool) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tests {
		args = append(args, "-test")
	}
	out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Fields(string(out))
}
