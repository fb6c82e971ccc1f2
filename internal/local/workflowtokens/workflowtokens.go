// Package workflowtokens adapts the local ASL runner to the long-form
// workflow's task-token port (longform.TaskTokens), as the workflow
// package adapts Step Functions' API: the runner itself knows nothing of
// the service.
package workflowtokens

import (
	"context"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
)

var (
	_ longform.Workflow   = (*stepfunctions.Workflow)(nil)
	_ longform.TaskTokens = TaskTokens{}
)

// TaskTokens is the service's port for resuming waiting tasks
// (longform.TaskTokens) on the local runner, with the answers that say no
// task waits on the token any more as domain.ErrTaskGone, as the
// production adapter maps Step Functions' TaskDoesNotExist, TaskTimedOut
// and InvalidToken.
type TaskTokens struct{ Workflow *stepfunctions.Workflow }

func (t TaskTokens) SendTaskSuccess(ctx context.Context, token string, output []byte) error {
	return taskGone(t.Workflow.SendTaskSuccess(ctx, token, output))
}

func (t TaskTokens) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	return taskGone(t.Workflow.SendTaskFailure(ctx, token, errorName, cause))
}

func (t TaskTokens) SendTaskHeartbeat(ctx context.Context, token string) error {
	return taskGone(t.Workflow.SendTaskHeartbeat(ctx, token))
}

func taskGone(err error) error {
	if errors.Is(err, stepfunctions.ErrTaskDoesNotExist) || errors.Is(err, stepfunctions.ErrTaskTimedOut) || errors.Is(err, stepfunctions.ErrInvalidToken) {
		return fmt.Errorf("%w: %v", domain.ErrTaskGone, err)
	}
	return err
}
