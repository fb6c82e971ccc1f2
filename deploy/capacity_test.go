package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Lambda's default concurrency quota per account and region, and what AWS
// keeps unreserved for the functions without a reservation
// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
const (
	regionalConcurrency = 1000
	minUnreserved       = 100
)

// apiFunctions are the functions every request goes through: the
// authorizer and each route's.
func apiFunctions() []string {
	out := []string{"AuthorizerFunction"}
	for _, r := range routes {
		if !slices.Contains(out, r.Function) {
			out = append(out, r.Function)
		}
	}
	return out
}

// evaluated is a function's property as a stack deployed with params gets it.
func evaluated(t *testing.T, function, property string, params map[string]string) (any, bool) {
	t.Helper()
	v, ok := resource(t, function, "AWS::Serverless::Function").Properties[property]
	if !ok {
		return nil, false
	}
	got, err := tmpl(t).Evaluate(v, params)
	if err != nil {
		t.Fatalf("%s.%s: %v", function, property, err)
	}
	return got, got != nil
}

// maximumConcurrency is the ScalingConfig.MaximumConcurrency of each SQS
// event source of the function (0 when it has none).
func maximumConcurrency(t *testing.T, function string) map[string]int {
	out := map[string]int{}
	resource(t, function, "AWS::Serverless::Function")
	for name, p := range sqsTriggers(tmpl(t), function) {
		sc, _ := p["ScalingConfig"].(map[string]any)
		out[name], _ = number(sc["MaximumConcurrency"])
	}
	return out
}

// alwaysReserved are the functions that reserve their concurrency
// whatever ReserveConcurrency says, unless ReserveStreamConcurrency is
// false (an account too small to reserve it): the stream function, each of
// whose invocations lasts up to 10 minutes, so that unreserved a flood of
// streams would take the account's concurrency from everything else.
var alwaysReserved = []string{"EventStreamFunction"}

func TestTheAPIReservesConcurrencyWithinTheRegionsQuota(t *testing.T) {
	tpl := tmpl(t)
	p, _ := tpl.Parameters["ReserveConcurrency"].(map[string]any)
	// Off by default: with it on, a deploy on an account with less than
	// the reservations + 100 unreserved fails as a whole.
	if p["Default"] != "false" || !slices.Equal(stringsOf(p["AllowedValues"]), []string{"true", "false"}) {
		t.Errorf("Parameters.ReserveConcurrency is %s, want AllowedValues [true, false] and Default false", show(p))
	}
	on, off := map[string]string{"ReserveConcurrency": "true"}, map[string]string{"ReserveConcurrency": "false"}

	reserved := map[string]int{}
	for _, f := range functions {
		v, ok := evaluated(t, f.ID, "ReservedConcurrentExecutions", on)
		if !ok {
			continue
		}
		n, isNumber := number(v)
		if !isNumber || n < 1 || n > regionalConcurrency-minUnreserved {
			// 0 is valid for Lambda but throttles every invocation.
			t.Errorf("%s: ReservedConcurrentExecutions is %s, want 1 to %d", f.ID, show(v), regionalConcurrency-minUnreserved)
			continue
		}
		reserved[f.ID] = n
		v, ok = evaluated(t, f.ID, "ReservedConcurrentExecutions", off)
		switch {
		case slices.Contains(alwaysReserved, f.ID):
			if m, _ := number(v); !ok || m != n {
				t.Errorf("%s: with ReserveConcurrency=false it reserves %s, want its %d all the same", f.ID, show(v), n)
			}
		case ok:
			t.Errorf("%s: with ReserveConcurrency=false it still reserves %s", f.ID, show(v))
		}
	}
	for _, fn := range alwaysReserved {
		if _, ok := reserved[fn]; !ok {
			t.Errorf("%s: no ReservedConcurrentExecutions; it must always reserve its concurrency", fn)
		}
		// An account under 120 unreserved can still deploy: the stream
		// function's reservation is the one thing ReserveStreamConcurrency
		// turns off.
		small := map[string]string{"ReserveConcurrency": "false", "ReserveStreamConcurrency": "false"}
		if v, ok := evaluated(t, fn, "ReservedConcurrentExecutions", small); ok {
			t.Errorf("%s: with ReserveStreamConcurrency=false it still reserves %s", fn, show(v))
		}
	}
	if p, _ := tpl.Parameters["ReserveStreamConcurrency"].(map[string]any); p["Default"] != "true" || !slices.Equal(stringsOf(p["AllowedValues"]), []string{"true", "false"}) {
		t.Errorf("Parameters.ReserveStreamConcurrency is %s, want AllowedValues [true, false] and Default true", show(p))
	}
	for _, fn := range apiFunctions() {
		if _, ok := reserved[fn]; !ok {
			t.Errorf("%s: no ReservedConcurrentExecutions; every API function reserves its concurrency, so the workflow's tasks cannot starve the API", fn)
		}
	}

	sum := 0
	for _, n := range reserved {
		sum += n
	}
	unreserved := regionalConcurrency - sum
	if unreserved < minUnreserved {
		t.Errorf("the reservations add up to %d, leaving %d of the default %d unreserved; AWS refuses a reservation that leaves under %d", sum, unreserved, regionalConcurrency, minUnreserved)
	}
	// The functions without a reservation share what is left; the queue
	// consumers among them take at most their MaximumConcurrency, and the
	// workflow's tasks and the sweeper need the rest.
	consumers := 0
	for _, f := range functions {
		for event, max := range maximumConcurrency(t, f.ID) {
			if n, ok := reserved[f.ID]; ok {
				if n < max {
					t.Errorf("%s: reserves %d but %s may run %d at once; the rest would be throttled and retried", f.ID, n, event, max)
				}
				continue
			}
			consumers += max
		}
	}
	if unreserved-consumers < minUnreserved {
		t.Errorf("unreserved concurrency %d minus the queue consumers' %d leaves %d for the workflow's tasks, under %d", unreserved, consumers, unreserved-consumers, minUnreserved)
	}
	t.Logf("reserved %d (%d functions), unreserved %d of %d, of which the queue consumers take at most %d", sum, len(reserved), unreserved, regionalConcurrency, consumers)

	// The plan gives each number its reason: it must show the same numbers.
	plan, err := os.ReadFile("../docs/capacity.md")
	if err != nil {
		t.Fatalf("docs/capacity.md: %v", err)
	}
	for fn, n := range reserved {
		if !regexp.MustCompile(fmt.Sprintf("(?m)^\\| `?%s`? \\| %d \\|", fn, n)).Match(plan) {
			t.Errorf("docs/capacity.md has no row \"| %s | %d | ...\" for the reservation template.yaml sets", fn, n)
		}
	}
	if !regexp.MustCompile(fmt.Sprintf(`\b%d\b`, sum)).Match(plan) {
		t.Errorf("docs/capacity.md does not state the total reserved, %d", sum)
	}

	// Both docs say what turning it on needs, with the command that checks
	// it, and docs/deploy.md's parameter row gives today's numbers.
	deploy, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	needed := sum + minUnreserved
	const check = "aws lambda get-account-settings --query AccountLimit.UnreservedConcurrentExecutions"
	for name, doc := range map[string][]byte{"docs/capacity.md": plan, "docs/deploy.md": deploy} {
		if !strings.Contains(string(doc), check) || !regexp.MustCompile(fmt.Sprintf(`\b%d\b`, needed)).Match(doc) {
			t.Errorf("%s does not give the check before ReserveConcurrency=true (%q, at least %d)", name, check, needed)
		}
	}
	row := regexp.MustCompile("(?m)^\\| `ReserveConcurrency` \\|.*$").Find(deploy)
	if row == nil {
		t.Fatal("docs/deploy.md has no parameter row for ReserveConcurrency")
	}
	for _, n := range regexp.MustCompile(`\b\d{3}\b`).FindAll(row, -1) {
		if got := string(n); got != fmt.Sprint(sum) && got != fmt.Sprint(needed) && got != fmt.Sprint(minUnreserved) {
			t.Errorf("docs/deploy.md's ReserveConcurrency row says %s; the template reserves %d and needs %d", got, sum, needed)
		}
	}
}

func TestEveryQueueConsumerHasABoundedConcurrency(t *testing.T) {
	found := 0
	for _, f := range functions {
		for event, max := range maximumConcurrency(t, f.ID) {
			found++
			// SQS event sources accept 2 to 1,000.
			if max < 2 || max > 1000 {
				t.Errorf("%s (%s): ScalingConfig.MaximumConcurrency is %d, want 2 to 1000", f.ID, event, max)
			}
		}
	}
	if found < 2 {
		t.Errorf("found %d SQS event sources, want the poller's and the webhooks'", found)
	}
}
