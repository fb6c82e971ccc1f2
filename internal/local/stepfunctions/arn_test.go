package stepfunctions

import (
	"context"
	"encoding/json"
	"testing"
)

// The context object names the execution and its state machine by their
// ARNs: the state machine's own (Config.ARN, what the stack named it) and
// the execution's, which Step Functions makes from it and the execution's
// name; without one, ARNs in a local account.
func TestTheContextObjectCarriesTheExecutionsARN(t *testing.T) {
	const def = `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"execution.$":"$$.Execution.Id","machine.$":"$$.StateMachine.Id"},"End":true}}}`
	tests := []struct{ name, arn, wantExecution, wantMachine string }{
		{"the stack's", "arn:aws:states:us-east-1:123456789012:stateMachine:mg-LongStory",
			"arn:aws:states:us-east-1:123456789012:execution:mg-LongStory:video-1",
			"arn:aws:states:us-east-1:123456789012:stateMachine:mg-LongStory"},
		{"a local account's", "", "arn:aws:states:local:000000000000:execution:sm:video-1",
			"arn:aws:states:local:000000000000:stateMachine:sm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load("sm", []byte(def), Config{ARN: tt.arn})
			if err != nil {
				t.Fatal(err)
			}
			e, err := m.Start(context.Background(), "video-1", json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Wait()
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			json.Unmarshal(out, &got)
			if got["execution"] != tt.wantExecution || got["machine"] != tt.wantMachine || e.ID != tt.wantExecution {
				t.Errorf("$$.Execution.Id %q (ID %q), $$.StateMachine.Id %q; want %q, %q", got["execution"], e.ID, got["machine"], tt.wantExecution, tt.wantMachine)
			}
		})
	}
}
