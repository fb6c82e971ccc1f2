package stepfunctions

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ExecutionEnd describes an execution that ended, for Config.OnExecutionEnd.
type ExecutionEnd struct {
	ExecutionArn    string
	Name            string
	StateMachineArn string
	// Status is SUCCEEDED, FAILED, TIMED_OUT or ABORTED.
	Status string
	Input  json.RawMessage
	// Output is set only when the execution succeeded.
	Output          json.RawMessage
	Error, Cause    string
	StartDate       time.Time
	StopDate        time.Time
	HistoryEvents   int
	MaxPayloadBytes int
}

// eventBridgePayloadLimit is where the service starts leaving input and
// output out of the event ("248KB" of escaped text; read as KiB).
const eventBridgePayloadLimit = 248 * 1024

// EventBridgeEvent renders the "Step Functions Execution Status Change"
// event the service sends to the default event bus when an execution ends
// (developer guide, "EventBridge for Step Functions execution status
// changes"). Its detail carries what DescribeExecution answers; dates are
// milliseconds since the epoch. When the escaped output is over 248KB it is
// left out, and so is the input when input and output together are; the
// inputDetails/outputDetails "included" flags say so. Account and region
// come from the execution's ARN.
func (e ExecutionEnd) EventBridgeEvent() ([]byte, error) {
	arn := strings.Split(e.ExecutionArn, ":")
	if len(arn) < 8 || arn[0] != "arn" || arn[2] != "states" {
		return nil, fmt.Errorf("eventbridge event: %q is not an execution ARN", e.ExecutionArn)
	}
	type included struct {
		Included bool `json:"included"`
	}
	detail := struct {
		ExecutionArn    string    `json:"executionArn"`
		StateMachineArn string    `json:"stateMachineArn"`
		Name            string    `json:"name"`
		Status          string    `json:"status"`
		StartDate       int64     `json:"startDate"`
		StopDate        int64     `json:"stopDate"`
		Input           *string   `json:"input"`
		Output          *string   `json:"output"`
		InputDetails    included  `json:"inputDetails"`
		OutputDetails   *included `json:"outputDetails"`
		Error           *string   `json:"error"`
		Cause           *string   `json:"cause"`
	}{
		ExecutionArn: e.ExecutionArn, StateMachineArn: e.StateMachineArn, Name: e.Name, Status: e.Status,
		StartDate: e.StartDate.UnixMilli(), StopDate: e.StopDate.UnixMilli(),
	}
	in := string(e.Input)
	inLen := escapedLen(in)
	if e.Output != nil {
		out := string(e.Output)
		outLen := escapedLen(out)
		detail.OutputDetails = &included{Included: outLen <= eventBridgePayloadLimit}
		if detail.OutputDetails.Included {
			detail.Output = &out
		}
		inLen += outLen
	}
	detail.InputDetails.Included = inLen <= eventBridgePayloadLimit
	if detail.InputDetails.Included {
		detail.Input = &in
	}
	if e.Error != "" {
		detail.Error = &e.Error
	}
	if e.Cause != "" {
		detail.Cause = &e.Cause
	}
	event := struct {
		Version    string   `json:"version"`
		ID         string   `json:"id"`
		DetailType string   `json:"detail-type"`
		Source     string   `json:"source"`
		Account    string   `json:"account"`
		Time       string   `json:"time"`
		Region     string   `json:"region"`
		Resources  []string `json:"resources"`
		Detail     any      `json:"detail"`
	}{
		Version: "0", ID: uuid.NewString(), DetailType: "Step Functions Execution Status Change", Source: "aws.states",
		Account: arn[4], Time: e.StopDate.UTC().Format(time.RFC3339), Region: arn[3],
		Resources: []string{e.ExecutionArn}, Detail: detail,
	}
	return json.Marshal(event)
}

// escapedLen is the length of s escaped as a JSON string, quotes left out.
func escapedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}
