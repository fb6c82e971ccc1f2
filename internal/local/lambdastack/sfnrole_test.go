package lambdastack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The state machine's own role is what lets its tasks invoke the
// functions: with the expanded role's policy on NarrateFunction taken out
// (SAM's LambdaInvokePolicy, one per function), the Narrate task fails as
// Step Functions reports Lambda's 403, Lambda.AWSLambdaException with
// AccessDeniedException in its cause, and NarrateFunction never runs; its
// retries exhausted, the video fails through MarkFailed (which the role
// may still invoke), its hold released once, and the denial is recorded
// with moto's, named after the state machine.
func TestATaskWhoseFunctionTheStateMachinesRoleMayNotInvokeFails(t *testing.T) {
	requireTools(t)
	cfg := testConfig(t, "sfnrole")
	removed := 0
	cfg.Edit = func(doc map[string]any) {
		role, _ := doc["Resources"].(map[string]any)["LongStoryStateMachineRole"].(map[string]any)
		props, _ := role["Properties"].(map[string]any)
		policies, _ := props["Policies"].([]any)
		kept := []any{}
		for _, p := range policies {
			raw, _ := json.Marshal(p)
			if strings.Contains(string(raw), `"lambda:InvokeFunction"`) && strings.Contains(string(raw), `{"Ref":"NarrateFunction"}`) {
				removed++
				continue
			}
			kept = append(kept, p)
		}
		props["Policies"] = kept
	}
	defer os.RemoveAll(cfg.Dir)
	l, err := StartLocal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if removed != 1 {
		t.Fatalf("removed %d policies of LongStoryStateMachineRole naming NarrateFunction, want its one LambdaInvokePolicy", removed)
	}
	id, price := createLong(t, l, 1, true)
	view := waitLong(t, l, id, 3*time.Minute)
	if view["status"] != "failed" || !strings.Contains(fmt.Sprint(view), "Lambda.AWSLambdaException") {
		t.Errorf("the video ended %v, want failed naming Lambda.AWSLambdaException: %v", view["status"], view)
	}
	if n := l.Functions()["NarrateFunction"].Invocations(); n != 0 {
		t.Errorf("NarrateFunction ran %d times; the state machine's role may not invoke it", n)
	}
	if l.Functions()["SubmitSceneFunction"].Invocations() == 0 || l.Functions()["MarkFailedFunction"].Invocations() == 0 {
		t.Errorf("the functions the role may invoke did not run: SubmitScene %d, MarkFailed %d",
			l.Functions()["SubmitSceneFunction"].Invocations(), l.Functions()["MarkFailedFunction"].Invocations())
	}
	narrate := l.Functions()["NarrateFunction"].Name
	denials := l.Moto.Denials()
	if len(denials) == 0 {
		t.Fatal("no denial recorded")
	}
	for _, d := range denials {
		if d.Caller != "LongStoryStateMachine" || d.Action != "lambda:InvokeFunction" || d.Code != "AccessDeniedException" ||
			!strings.Contains(d.Message, "is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:"+region+":"+accountID+":function:"+narrate) {
			t.Errorf("denial %+v, want only the state machine's lambda:InvokeFunction of %s", d, narrate)
		}
	}
	if st, errName, _ := l.StateMachines()["LongStoryStateMachine"].Execution(id); st != "FAILED" || errName != "LongVideoFailed" {
		t.Errorf("the execution is %s (%s), want FAILED (LongVideoFailed)", st, errName)
	}
	entries := journal(t, l, id, "hold", "release")
	if len(entries["release"]) != 1 || len(entries["capture"]) != 0 || !sameAmount(entries["release"][0], price) {
		t.Errorf("journal of %s: %v; want its hold of %.2f released once", id, entries, price)
	}
}
