// Package workflow starts the long-form state machine on AWS Step Functions.
package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

var (
	_ longform.Workflow   = (*StepFunctions)(nil)
	_ longform.TaskTokens = (*TaskTokens)(nil)
)

// SFNAPI is the part of the Step Functions client the starter uses.
type sfnapi interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// StepFunctions starts executions of one state machine.
type StepFunctions struct {
	Client          sfnapi
	StateMachineARN string
}

// Start starts an execution named after the video. Step Functions treats a
// repeated StartExecution with the same name and input as the same
// execution, so a retried create never runs the workflow twice.
func (s *StepFunctions) Start(ctx context.Context, name string, input []byte) error {
	_, err := s.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(s.StateMachineARN), Name: aws.String(name), Input: aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		return fmt.Errorf("start execution %s: a different execution has this name: %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("start execution %s: %w", name, err)
	}
	return nil
}

// ExecutionARN is the ARN of the named execution of the state machine.
func (s *StepFunctions) ExecutionARN(name string) string {
	return strings.Replace(s.StateMachineARN, ":stateMachine:", ":execution:", 1) + ":" + name
}

// Stop stops the named execution; one that already ended or does not exist
// is not an error (the cancel that calls it has already settled the video).
func (s *StepFunctions) Stop(ctx context.Context, name, cause string) error {
	_, err := s.Client.StopExecution(ctx, &sfn.StopExecutionInput{
		ExecutionArn: aws.String(s.ExecutionARN(name)), Cause: aws.String(cause), Error: aws.String("Canceled"),
	})
	var missing *types.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop execution %s: %w", name, err)
	}
	return nil
}

// TokenAPI is the part of the Step Functions client that resumes a task
// waiting on a task token.
type tokenAPI interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
	SendTaskHeartbeat(ctx context.Context, in *sfn.SendTaskHeartbeatInput, opts ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error)
}

// TaskTokens resumes the workflow's tasks that wait on a task token.
type TaskTokens struct {
	Client tokenAPI
}

// SendTaskSuccess ends the token's task with output as its result.
func (t *TaskTokens) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	_, err := t.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(string(output))})
	return tokenError("send task success", err)
}

// SendTaskFailure fails the token's task with an error the workflow's
// Retry and Catch match by name.
func (t *TaskTokens) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	_, err := t.Client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token),
		Error: aws.String(clip(errorName, 256)), Cause: aws.String(clip(cause, 32768))})
	return tokenError("send task failure", err)
}

// SendTaskHeartbeat tells the token's task that its work goes on.
func (t *TaskTokens) SendTaskHeartbeat(ctx context.Context, token string) error {
	_, err := t.Client.SendTaskHeartbeat(ctx, &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)})
	return tokenError("send task heartbeat", err)
}

// tokenError maps the answers that say no task waits on the token any
// more to domain.ErrTaskGone.
func tokenError(op string, err error) error {
	if err == nil {
		return nil
	}
	var gone *types.TaskDoesNotExist
	var timedOut *types.TaskTimedOut
	var invalid *types.InvalidToken
	if errors.As(err, &gone) || errors.As(err, &timedOut) || errors.As(err, &invalid) {
		return fmt.Errorf("%s: %w: %v", op, domain.ErrTaskGone, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// clip bounds a text to what the API accepts.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
