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

	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
)

// The Step Functions API of the local state machines, behind moto's
// endpoint (every function's AWS_ENDPOINT_URL): a request whose
// X-Amz-Target is AWSStepFunctions.<Op> is first sent to moto as signed,
// for moto's check of its access key and signature; a request moto does
// not answer as it answers an authenticated one is refused as AWS refuses
// it (MissingAuthenticationTokenException, UnrecognizedClientException,
// InvalidSignatureException). The caller's role then decides the action
// on its resource (sfnDenied), and the runner answers (moto has no state
// machine of the stack: its StateMachineDoesNotExist or TaskDoesNotExist
// mean only that the call passed).

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
		switch se.code {
		case "InternalFailure":
			status = http.StatusInternalServerError
		case "ServiceUnavailable":
			status = http.StatusServiceUnavailable
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
	// Under sm.mu, which stopAll takes to list the executions it stops:
	// one started before Close set closing is stopped with the others.
	if sm.stack.closing.Load() {
		return nil, &sfnError{"ServiceUnavailable", "the local Step Functions is shutting down"}
	}
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
// and the presigned S3 requests it checks as S3 does (presigned.go),
// each after moto has authenticated its caller (authenticate) and the
// caller's role allowed it (sfnDenied, pollyDenied); and it holds a
// caller's calls that a test stalls (Moto.Stall). It reports whether it
// answered.
func (s *Stack) intercept(w http.ResponseWriter, r *http.Request) bool {
	s.Moto.stall(r)
	if s.s3Presigned(w, r) {
		return true
	}
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
		if refused := s.Moto.authenticate(r, body, sfnAnswered); refused != nil {
			writeJSONError(w, refused.Status, refused.Code, refused.Message)
			return true
		}
		if denied := s.sfnDenied(r, op, body); denied != nil {
			writeJSONError(w, denied.Status, denied.Code, denied.Message)
			return true
		}
		s.serveSFN(w, op, body)
		return true
	}
	if refused := s.Moto.authenticate(r, body, pollyAnswered); refused != nil {
		// Polly's REST protocol answers its authentication errors as 403.
		writeJSONError(w, http.StatusForbidden, refused.Code, refused.Message)
		return true
	}
	// moto names Polly's action after the path (polly:speech), where AWS
	// checks polly:SynthesizeSpeech: the caller's role's policies decide
	// here (pollyDenied).
	if denied := s.pollyDenied(r); denied != nil {
		writeJSONError(w, denied.Status, denied.Code, denied.Message)
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

// sfnOwnErrors are the errors of the Step Functions API itself: moto
// answers one only after it has authenticated the caller and allowed the
// action (moto has none of the stack's state machines, executions or
// tokens, so StateMachineDoesNotExist and the like are its usual answer).
var sfnOwnErrors = map[string]bool{
	"StateMachineDoesNotExist": true, "ExecutionDoesNotExist": true, "TaskDoesNotExist": true,
	"TaskTimedOut": true, "InvalidToken": true, "InvalidArn": true, "InvalidName": true,
	"InvalidOutput": true, "InvalidExecutionInput": true, "ExecutionAlreadyExists": true,
	"ExecutionLimitExceeded": true, "ValidationException": true,
}

// sfnAnswered reports whether moto's answer to a Step Functions call
// means it authenticated the caller and allowed the action.
func sfnAnswered(status int, code string) bool {
	return status < 400 || status == http.StatusBadRequest && sfnOwnErrors[code]
}

// pollyAnswered reports whether moto's answer to SynthesizeSpeech means it
// authenticated the caller. moto authorizes the action as polly:speech,
// which no role has: its AccessDenied comes after the caller's key and
// signature were checked, and the role's own decision is pollyDenied's.
// Its parameter checks come after authentication too, and refuse what
// Polly takes: moto 5.2.1 spells the sentence mark "sentance", so a
// caller it lets through (the admin) asking for sentence marks gets its
// InvalidParameterValue.
func pollyAnswered(status int, code string) bool {
	return status < 400 || isDenial(code) ||
		status == http.StatusBadRequest && (code == "InvalidSampleRateException" || code == "ValidationException" || code == "InvalidParameterValue")
}

// authenticate sends the request to moto as it was signed, for moto's
// check of its access key and signature: nil when moto's answer is one
// answered says a call that passed them gets; else the call is refused,
// as AWS refuses it (recorded with moto's errors). A request with no
// Authorization header is refused here: AWS answers it
// MissingAuthenticationTokenException, where moto fails on it. Whatever
// else moto answered is dropped.
func (m *Moto) authenticate(r *http.Request, body []byte, answered func(status int, code string) bool) *Call {
	refuse := func(status int, code, msg string) *Call {
		m.record(r, status, code, msg)
		return &Call{Caller: m.caller(r), Action: action(r), Status: status, Code: code, Message: msg}
	}
	if r.Header.Get("Authorization") == "" {
		return refuse(http.StatusBadRequest, "MissingAuthenticationTokenException", "Missing Authentication Token")
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, m.Server+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return refuse(http.StatusInternalServerError, "InternalFailure", err.Error())
	}
	req.Header = r.Header.Clone()
	req.Host = r.Host // signed
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return refuse(http.StatusInternalServerError, "InternalFailure", fmt.Sprintf("moto's IAM decision: %v", err))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	code, msg := errorCode(raw)
	if answered(resp.StatusCode, code) {
		return nil
	}
	status, code, msg := awsAuthError(resp.StatusCode, code, msg)
	return refuse(status, code, msg)
}

// awsAuthError is AWS's answer for moto's refusal of a request: its
// authentication errors by the names AWS's JSON services give them (moto
// answers in IAM's words), an authorization error as AccessDeniedException,
// a failure of moto's as InternalFailure, anything else as moto said.
func awsAuthError(status int, code, msg string) (int, string, string) {
	switch {
	case code == "InvalidClientTokenId":
		return http.StatusBadRequest, "UnrecognizedClientException", "The security token included in the request is invalid."
	case code == "SignatureDoesNotMatch":
		return http.StatusBadRequest, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	case isDenial(code), status == http.StatusUnauthorized, status == http.StatusForbidden:
		return http.StatusBadRequest, "AccessDeniedException", msg
	case status >= 500, code == "":
		return http.StatusInternalServerError, "InternalFailure", fmt.Sprintf("moto answered HTTP %d %s: %s", status, code, msg)
	}
	return status, code, msg
}

// sfnDenied decides a Step Functions call as IAM does on the caller's
// role's policies (the template's, which moto sees with their resources
// made "*"), on the resource the service authorization reference names
// for the action: the state machine for StartExecution, the execution for
// StopExecution and DescribeExecution. SendTaskSuccess, SendTaskFailure
// and SendTaskHeartbeat list no resource type there, yet AWS authorizes
// them against the state machine that issued the token (its
// AccessDeniedException names "on resource: ...:stateMachine:<name>", and
// a policy scoped to the state machine works, as the template's is): that
// is the resource here, and the action alone for a token no machine
// issued. nil when allowed; else AccessDeniedException, recorded with
// moto's denials.
func (s *Stack) sfnDenied(r *http.Request, op string, body []byte) *Call {
	caller := s.Moto.caller(r)
	if caller == "admin" {
		return nil
	}
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		ExecutionArn    string `json:"executionArn"`
		TaskToken       string `json:"taskToken"`
	}
	json.Unmarshal(body, &in) // a malformed body is serveSFN's to refuse
	resource := ""
	switch op {
	case "StartExecution":
		resource = in.StateMachineArn
	case "StopExecution", "DescribeExecution":
		resource = in.ExecutionArn
	case "SendTaskSuccess", "SendTaskFailure", "SendTaskHeartbeat":
		for _, sm := range s.machines {
			if sm.machine.HasTask(in.TaskToken) {
				resource = sm.ARN
			}
		}
	}
	return s.functionDenied(r, caller, "states:"+op, resource, http.StatusBadRequest)
}

// functionDenied decides action on resource ("": the action alone) for
// the function caller as IAM does on its role's inline policies: nil when
// allowed; else IAM's AccessDeniedException (HTTP status: the service's),
// recorded with moto's denials.
func (s *Stack) functionDenied(r *http.Request, caller, action, resource string, status int) *Call {
	d := implicitDeny
	if role := s.roleOf(caller, "Role"); role != "" {
		d = s.roleDecision(role, action, resource)
	}
	if d == allowed {
		return nil
	}
	msg := deniedMessage(fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", accountID, s.roles[caller].name, sessionName(s.Ref(caller))),
		action, resource, d)
	s.Moto.record(r, status, "AccessDeniedException", msg)
	return &Call{Caller: caller, Action: action, Status: status, Code: "AccessDeniedException", Message: msg}
}

// deniedMessage is IAM's message for a denied action.
func deniedMessage(principal, action, resource string, d decision) string {
	why := "because no identity-based policy allows the " + action + " action"
	if d == explicitDeny {
		why = "with an explicit deny in an identity-based policy"
	}
	on := ""
	if resource != "" {
		on = " on resource: " + resource
	}
	return fmt.Sprintf("User: %s is not authorized to perform: %s%s %s", principal, action, on, why)
}
