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
)

// SFNAPI is the part of the Step Functions client the starter uses.
type SFNAPI interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// StepFunctions starts executions of one state machine.
type StepFunctions struct {
	Client          SFNAPI
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
