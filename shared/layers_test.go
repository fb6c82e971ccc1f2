// Package shared_test checks the layering of the shared packages.
package shared_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The use cases and the domain own their ports and link no adapter: no AWS
// SDK or Lambda package is among their dependencies, so they build, test
// and read without them. Adapters (s3bucket, sqsqueue, sqsbatch,
// lambdahttp, workflow, dynamostore, narration) and the wirings
// (lambdawiring, local/runtime) are the only packages that do.
func TestUseCasesLinkNoAWSPackage(t *testing.T) {
	pure := []string{
		"generation", "job", "longstory", "httpapi", "routes", "apiview", "accounts", "webhook", "sweeper",
		"domain", "catalog", "pricing", "routing", "media", "store", "upstream", "apikey", "clock",
	}
	for _, p := range pure {
		t.Run(p, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "github.com/mediagen-dev/mediagen/shared/"+p).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				if strings.HasPrefix(dep, "github.com/aws/") {
					t.Errorf("shared/%s links %s", p, dep)
				}
			}
		})
	}
}

// The emulators are generic: the ASL runner runs any definition, so it
// links none of the service's packages (the long-form workflow's port on
// it is the adapter local/workflowtokens), and a test of it runs without
// the service. Its tests wait as every test does, through the test kit
// waitfor, which is the standard library's alone (any package of ours it
// linked would be listed, and refused, here).
func TestTheASLRunnerKnowsNothingOfTheService(t *testing.T) {
	const runner = "github.com/mediagen-dev/mediagen/shared/local/stepfunctions"
	const waitfor = "github.com/mediagen-dev/mediagen/shared/testsupport/waitfor"
	out, err := exec.Command("go", "list", "-deps", "-test", runner).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/mediagen-dev/mediagen/") && !strings.HasPrefix(dep, runner) && dep != waitfor {
			t.Errorf("the ASL runner (or its tests) links %s", dep)
		}
	}
}

// The stores' conformance suite holds a store to the port and the ledger's
// invariant (package ledger), never to a use case: it links none of them,
// so a use case can change without the suite that judges the adapters. The
// sweeper is the one it runs: its work is nothing but store calls (settle,
// free slots), which the suite checks on both adapters as a whole.
func TestTheStoreSuiteLinksNoUseCase(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "github.com/mediagen-dev/mediagen/shared/store/storetest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, useCase := range []string{"accounts", "generation", "job", "longstory", "httpapi", "apiview", "webhook"} {
			if strings.HasPrefix(dep, "github.com/mediagen-dev/mediagen/shared/"+useCase) {
				t.Errorf("storetest links the use case %s", dep)
			}
		}
	}
}
