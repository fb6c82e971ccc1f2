package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/local/stepfunctions"
)

// The Step Functions API of the local state machines, behind moto's
// endpoint (every function's AWS_ENDPOINT_URL): a request whose
// X-Amz-Target is AWSStepFunctions.<Op> is first sent to moto as signed,
// for moto's IAM decision on its action; a refusal is the caller's answer
// (AccessDeniedException, as AWS answers it), anything else moto says is
// dropped and the runner answers instead (moto has no state machine of
// the stack: its StateMachineDoesNotExist or TaskDoesNotExist mean only
// that the call was allowed).

const sfnTargetPrefix = "AWSStepFunctions."

// sfnError is an error of the Step Functions API.
type sfnError struct {
	code, message string
}

func (e *sfnError) Error() string { return e.code + ": " + e.message }

// serveSFN answers one Step Functions API call from the runner.
func (s *Stack) serveSFN(w http.ResponseWriter, op string, body []byte) {
	out, err := s.sfnCall(op, body)
	if err != nil {
		var se *sfnError
		if !errors.As(err, &se) {
			se = &sfnError{code: "InternalFailure", message: err.Error()}
		}
		status := http.StatusBadRequest
		if se.code == "InternalFailure" {
			status = http.StatusInternalServerError
		}
		writeJSONError(w, status, se.code, se.message)
		return
	}
	raw, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Write(raw)
}

// writeJSONError answers an error as AWS's JSON protocols do.
func writeJSONError(w http.ResponseWriter, status int, code, message string) {
	raw, _ := json.Marshal(map[string]string{"__type": code, "message": message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	w.Write(raw)
}

func epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// sfnCall runs one operation.
func (s *Stack) sfnCall(op string, body []byte) (any, error) {
	var in struct {
		StateMachineArn string  `json:"stateMachineArn"`
		ExecutionArn    string  `json:"executionArn"`
		Name            string  `json:"name"`
		Input           *string `json:"input"`
		Error           string  `json:"error"`
		Cause           string  `json:"cause"`
		TaskToken       string  `json:"taskToken"`
		Output          string  `json:"output"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &sfnError{"SerializationException", err.Error()}
	}
	ctx := context.Background()
	switch op {
	case "StartExecution":
		sm := s.machineOfARN(in.StateMachineArn)
		if sm == nil {
			return nil, &sfnError{"StateMachineDoesNotExist", "State Machine Does Not Exist: '" + in.StateMachineArn + "'"}
		}
		return sm.start(ctx, in.Name, in.Input)
	case "StopExecution":
		sm, x := s.executionOfARN(in.ExecutionArn)
		if x == nil {
			return nil, &sfnError{"ExecutionDoesNotExist", "Execution Does Not Exist: '" + in.ExecutionArn + "'"}
		}
		sm.mu.Lock()
		if x.end == nil {
			x.stopError, x.stopCause = in.Error, in.Cause
		}
		sm.mu.Unlock()
		x.e.Stop()
		return map[string]any{"stopDate": epoch(time.Now())}, nil
	case "DescribeExecution":
		sm, x := s.executionOfARN(in.ExecutionArn)
		if x == nil {
			return nil, &sfnError{"ExecutionDoesNotExist", "Execution Does Not Exist: '" + in.ExecutionArn + "'"}
		}
		return sm.describe(x), nil
	case "SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat":
		// A token is one machine's: the others do not know it.
		err := error(stepfunctions.ErrTaskDoesNotExist)
		for _, sm := range s.machines {
			switch op {
			case "SendTaskSuccess":
				err = sm.machine.SendTaskSuccess(ctx, in.TaskToken, json.RawMessage(in.Output))
			case "SendTaskFailure":
				err = sm.machine.SendTaskFailure(ctx, in.TaskToken, in.Error, in.Cause)
			default:
				err = sm.machine.SendTaskHeartbeat(ctx, in.TaskToken)
			}
			if !errors.Is(err, stepfunctions.ErrTaskDoesNotExist) {
				break
			}
		}
		if err != nil {
			return nil, tokenAPIError(err)
		}
		return map[string]any{}, nil
	}
	return nil, &sfnError{"UnknownOperationException", op + " is not served by the local Step Functions API"}
}

// tokenAPIError is the API's error for a refused Send* call.
func tokenAPIError(err error) error {
	for _, m := range []struct {
		err  error
		code string
	}{
		{stepfunctions.ErrTaskDoesNotExist, "TaskDoesNotExist"},
		{stepfunctions.ErrTaskTimedOut, "TaskTimedOut"},
		{stepfunctions.ErrInvalidOutput, "InvalidOutput"},
		{stepfunctions.ErrInvalidToken, "InvalidToken"},
		{stepfunctions.ErrDataLimitExceeded, "ValidationException"},
	} {
		if errors.Is(err, m.err) {
			return &sfnError{m.code, err.Error()}
		}
	}
	return err
}

func (s *Stack) machineOfARN(arn string) *StateMachine {
	for _, sm := range s.machines {
		if sm.ARN == arn {
			return sm
		}
	}
	return nil
}

func (s *Stack) executionOfARN(arn string) (*StateMachine, *execution) {
	for _, sm := range s.machines {
		prefix := sm.executionARN("")
		if name, ok := strings.CutPrefix(arn, prefix); ok {
			sm.mu.Lock()
			x := sm.executions[name]
			sm.mu.Unlock()
			if x != nil {
				return sm, x
			}
		}
	}
	return nil, nil
}

// start is StartExecution: a name that a running execution has with the
// same input answers that execution; any other reuse of a name is
// ExecutionAlreadyExists (standard workflows).
func (sm *StateMachine) start(ctx context.Context, name string, input *string) (any, error) {
	if name == "" {
		name = uuid.NewString()
	}
	if len(name) > 80 {
		return nil, &sfnError{"InvalidName", "the name is over 80 characters"}
	}
	in := "{}"
	if input != nil {
		in = *input
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if x, ok := sm.executions[name]; ok {
		if x.input == in && x.end == nil {
			return map[string]any{"executionArn": x.arn, "startDate": epoch(x.start)}, nil
		}
		return nil, &sfnError{"ExecutionAlreadyExists", "Execution Already Exists: '" + x.arn + "'"}
	}
	if !json.Valid([]byte(in)) {
		return nil, &sfnError{"InvalidExecutionInput", "Invalid State Machine Execution Input: the input is not JSON"}
	}
	// The execution outlives the request that started it.
	e, err := sm.machine.Start(context.WithoutCancel(ctx), name, json.RawMessage(in))
	if errors.Is(err, stepfunctions.ErrDataLimitExceeded) {
		return nil, &sfnError{"ValidationException", err.Error()}
	}
	if err != nil {
		return nil, &sfnError{"InvalidExecutionInput", err.Error()}
	}
	x := &execution{e: e, arn: sm.executionARN(name), input: in, start: time.Now()}
	sm.executions[name] = x
	return map[string]any{"executionArn": x.arn, "startDate": epoch(x.start)}, nil
}

func (sm *StateMachine) describe(x *execution) map[string]any {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	out := map[string]any{"executionArn": x.arn, "stateMachineArn": sm.ARN, "name": x.e.Name, "status": x.e.Status(),
		"startDate": epoch(x.start), "input": x.input}
	if end := x.end; end != nil {
		out["status"] = end.Status
		out["stopDate"] = epoch(end.StopDate)
		if end.Output != nil {
			out["output"] = string(end.Output)
		}
		if end.Error != "" {
			out["error"] = end.Error
		}
		if end.Cause != "" {
			out["cause"] = end.Cause
		}
	}
	return out
}

// intercept takes the requests to moto's endpoint that the stack answers
// itself: the Step Functions API and Polly's SynthesizeSpeech (polly.go),
// each after moto's IAM decision; and it holds a caller's calls that a
// test stalls (Moto.Stall). It reports whether it answered.
func (s *Stack) intercept(w http.ResponseWriter, r *http.Request) bool {
	s.Moto.stall(r)
	target := r.Header.Get("X-Amz-Target")
	op, isSFN := strings.CutPrefix(target, sfnTargetPrefix)
	isPolly := r.Method == http.MethodPost && r.URL.Path == "/v1/speech" && signingService(r) == "polly"
	if !isSFN && !isPolly {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return true
	}
	if isSFN {
		if denied := s.Moto.authorize(r, body); denied != nil {
			writeJSONError(w, http.StatusBadRequest, "AccessDeniedException", denied.Message)
			return true
		}
		s.serveSFN(w, op, body)
		return true
	}
	// moto names Polly's action after the path (polly:speech), where AWS
	// checks polly:SynthesizeSpeech: the caller's role's policies decide
	// here (pollyAuthorized).
	if denied := s.pollyAuthorized(r); denied != nil {
		writeJSONError(w, http.StatusForbidden, "AccessDeniedException", denied.Message)
		return true
	}
	s.servePolly(w, r, body)
	return true
}

// signingService is the service of a SigV4 request's credential scope.
func signingService(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	_, scope, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	scope, _, _ = strings.Cut(scope, ",")
	parts := strings.Split(scope, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

// authorize sends the request to moto as it was signed, for moto's IAM
// decision on its action: the denial moto answered, recorded as a call,
// or nil when the call is allowed (what else moto answered is dropped).
func (m *Moto) authorize(r *http.Request, body []byte) *Call {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, m.Server+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return &Call{Message: err.Error()}
	}
	req.Header = r.Header.Clone()
	req.Host = r.Host // signed
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &Call{Message: fmt.Sprintf("moto's IAM decision: %v", err)}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 400 {
		return nil
	}
	code, msg := errorCode(raw)
	if !IsDenial(code) {
		return nil
	}
	m.record(r, resp.StatusCode, code, msg)
	return &Call{Action: action(r), Status: resp.StatusCode, Code: code, Message: msg}
}
