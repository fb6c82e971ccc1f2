package lambdastack

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/local/lambdaruntime"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
)

// StateMachine is one of the template's state machines, run by the local
// ASL runner: its definition file with the template's
// DefinitionSubstitutions resolved as CloudFormation resolves them (the
// functions' ARNs as the stack names them), its Task states invoking the
// functions' bootstraps as Step Functions invokes Lambda, and its
// executions started, stopped and resumed through the Step Functions API
// the functions call (sfnapi.go).
type StateMachine struct {
	// Logical is its logical ID; ARN and Name are what the stack named it.
	Logical, ARN, Name string

	stack   *Stack
	machine *stepfunctions.Machine
	// role is the logical ID of its execution role (RoleArn), whose
	// policies decide each lambda:InvokeFunction of its tasks.
	role string

	mu         sync.Mutex
	executions map[string]*execution // by name
}

// execution is one execution, with what the API answers about it.
type execution struct {
	e     *stepfunctions.Execution
	arn   string
	input string
	start time.Time
	// stopError and stopCause are StopExecution's, for its end's event.
	stopError, stopCause string
	end                  *stepfunctions.ExecutionEnd
}

// StateMachines are the stack's state machines by logical ID.
func (s *Stack) StateMachines() map[string]*StateMachine {
	out := map[string]*StateMachine{}
	for k, v := range s.machines {
		out[k] = v
	}
	return out
}

// loadStateMachines loads every AWS::StepFunctions::StateMachine of the
// expanded template. The expansion names the definition by the S3 object
// `sam package` made of DefinitionUri, so the file is read where the SAM
// template's DefinitionUri says.
func (s *Stack) loadStateMachines(ctx context.Context) error {
	logicals := s.resourcesOfType("AWS::StepFunctions::StateMachine")
	if len(logicals) == 0 {
		return nil
	}
	tmpl, err := deploy.Load(filepath.Join(s.cfg.Root, "template.yaml"))
	if err != nil {
		return err
	}
	s.machines = map[string]*StateMachine{}
	for _, logical := range logicals {
		props := s.rawProperties(logical)
		var definition []byte
		switch {
		case props["DefinitionString"] != nil || props["Definition"] != nil:
			return fmt.Errorf("%s: an inline definition is not modelled (the template names a DefinitionUri)", logical)
		default:
			uri, _ := tmpl.Resources[logical].Properties["DefinitionUri"].(string)
			if uri == "" {
				return fmt.Errorf("%s: template.yaml names no DefinitionUri file", logical)
			}
			if definition, err = os.ReadFile(filepath.Join(s.cfg.Root, uri)); err != nil {
				return fmt.Errorf("%s: %w", logical, err)
			}
		}
		subs := map[string]string{}
		if raw, ok := props["DefinitionSubstitutions"]; ok {
			v, err := s.res.resolve(raw)
			if err != nil {
				return fmt.Errorf("%s: DefinitionSubstitutions: %w", logical, err)
			}
			m, _ := v.(map[string]any)
			for k, v := range m {
				subs[k] = scalar(v)
			}
		}
		p := s.res.created[logical]
		sm := &StateMachine{Logical: logical, ARN: p.attrs["Arn"], Name: p.attrs["Name"], stack: s, executions: map[string]*execution{},
			role: s.roleOf(logical, "RoleArn")}
		if sm.role == "" {
			return fmt.Errorf("%s: RoleArn is %v, want the role SAM makes (Fn::GetAtt <role>.Arn)", logical, props["RoleArn"])
		}
		// Every function the definition may name: a Task's Resource is its
		// function's ARN, or lambda:invoke's FunctionName (the runner
		// refuses the definition if one names anything else).
		resources := map[string]stepfunctions.TaskFunc{}
		for _, fn := range s.functions {
			task := lambdaTask(fn, sm.invokeDenied)
			resources[s.res.created[fn.Logical].attrs["Arn"]] = task
			resources[fn.Name] = task
		}
		sm.machine, err = stepfunctions.Load(sm.Name, definition, stepfunctions.Config{
			Substitutions: subs, Resources: resources, ARN: sm.ARN,
			Log:            s.cfg.Log.With("state_machine", logical),
			OnExecutionEnd: sm.ended,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", logical, err)
		}
		s.machines[logical] = sm
	}
	return nil
}

// executionARN is the ARN of the machine's execution named name.
func (sm *StateMachine) executionARN(name string) string {
	return strings.Replace(sm.ARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

// ended records an execution's end under the stack's ARNs (the runner
// names its executions in a local account) and raises EventBridge's
// "Step Functions Execution Status Change" event.
func (sm *StateMachine) ended(end stepfunctions.ExecutionEnd) {
	sm.mu.Lock()
	x := sm.executions[end.Name]
	if x != nil {
		end.ExecutionArn, end.StateMachineArn = x.arn, sm.ARN
		if end.Status == "ABORTED" {
			// An aborted execution carries StopExecution's error and cause.
			end.Error, end.Cause = x.stopError, x.stopCause
		}
		x.end = &end
	}
	sm.mu.Unlock()
	if x == nil {
		return
	}
	sm.stack.cfg.Log.Info("execution ended", "state_machine", sm.Logical, "execution", end.ExecutionArn, "status", end.Status, "error", end.Error)
	event, err := end.EventBridgeEvent()
	if err != nil {
		sm.stack.cfg.Log.Error("the execution's status change event", "execution", end.ExecutionArn, "error", err)
		return
	}
	sm.stack.putEvent(event)
}

// Execution reports an execution's status (RUNNING, SUCCEEDED, FAILED,
// TIMED_OUT, ABORTED) and its error, by name.
func (sm *StateMachine) Execution(name string) (status, errorName string, ok bool) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	x := sm.executions[name]
	if x == nil {
		return "", "", false
	}
	if x.end != nil {
		return x.end.Status, x.end.Error, true
	}
	return x.e.Status(), "", true
}

// stopAll stops every running execution and waits (a bounded while) for
// them to end, as the stack closes.
func (sm *StateMachine) stopAll(wait time.Duration) {
	sm.mu.Lock()
	var running []*stepfunctions.Execution
	for _, x := range sm.executions {
		running = append(running, x.e)
	}
	sm.mu.Unlock()
	deadline := time.After(wait)
	for _, e := range running {
		e.Stop()
	}
	for _, e := range running {
		select {
		case <-e.Done():
		case <-deadline:
			return
		}
	}
}

// lambdaTask invokes fn as Step Functions invokes a Lambda function: the
// state's input is the event, the answer its result, and a function error
// is the task's error named as Lambda reports it (the function's
// errorType, Sandbox.Timedout past its timeout, Runtime.ExitError on a
// crash), with Lambda's error payload as the cause. Step Functions never
// stops an invocation it started: when the state times out or the
// execution stops, the invocation runs on to its own end and its result
// is discarded. Step Functions invokes with the state machine's role:
// denied (the task's error), fn is not invoked.
func lambdaTask(fn *Function, denied func(*Function) *stepfunctions.TaskError) stepfunctions.TaskFunc {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		if err := denied(fn); err != nil {
			return nil, err
		}
		// The runner calls on a context nothing the execution does
		// cancels (stepfunctions.Machine.invoke): only its Close ends it.
		out, err := fn.Invoke(ctx, input)
		if err != nil {
			return nil, lambdaError(err)
		}
		return out, nil
	}
}

// lambdaError names an invocation's failure as Step Functions reports it.
func lambdaError(err error) *stepfunctions.TaskError {
	var fe *lambdaruntime.FunctionError
	switch {
	case errors.As(err, &fe):
		name := fe.Type
		if name == "" {
			name = fe.HeaderType
		}
		cause := string(fe.Raw)
		if len(fe.Raw) == 0 {
			raw, _ := json.Marshal(fe)
			cause = string(raw)
		}
		if name == "" {
			// "The cause could not be determined because Lambda did not
			// return an error type."
			name = "Lambda.Unknown"
		}
		return &stepfunctions.TaskError{Name: name, Cause: cause}
	case errors.Is(err, lambdaruntime.ErrThrottled):
		return &stepfunctions.TaskError{Name: "Lambda.TooManyRequestsException", Cause: err.Error()}
	case errors.Is(err, lambdaruntime.ErrRequestTooLarge):
		return &stepfunctions.TaskError{Name: "Lambda.RequestTooLargeException", Cause: err.Error()}
	}
	return &stepfunctions.TaskError{Name: "Lambda.ServiceException", Cause: err.Error()}
}

// invokeDenied decides the state machine's lambda:InvokeFunction of fn as
// IAM does on its role's policies (the function's ARN as the resource,
// which SAM's LambdaInvokePolicy names): nil when allowed, else the error
// Step Functions reports to the Task state, Lambda's 403 as
// Lambda.AWSLambdaException with Lambda's message as the cause (the
// denial is recorded with moto's).
func (sm *StateMachine) invokeDenied(fn *Function) *stepfunctions.TaskError {
	const action = "lambda:InvokeFunction"
	s := sm.stack
	arn := s.res.created[fn.Logical].attrs["Arn"]
	d := s.roleDecision(sm.role, action, arn)
	if d == allowed {
		return nil
	}
	msg := deniedMessage(fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", accountID, s.res.created[sm.role].ref, sfnSessionName()), action, arn, d)
	s.Moto.recordCall(Call{Caller: sm.Logical, Action: action, Status: http.StatusForbidden, Code: "AccessDeniedException", Message: msg})
	return &stepfunctions.TaskError{Name: "Lambda.AWSLambdaException",
		Cause: fmt.Sprintf("%s (Service: AWSLambda; Status Code: 403; Error Code: AccessDeniedException; Request ID: %s; Proxy: null)", msg, lambdaruntime.NewRequestID())}
}

// sfnSessionName is a role session's name as Step Functions makes them:
// 32 random letters.
func sfnSessionName() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}
