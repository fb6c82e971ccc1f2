package stepfunctions

import (
	"context"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/longstory"
)

var (
	_ longstory.Workflow   = (*Workflow)(nil)
	_ longstory.TaskTokens = TaskTokens{}
)

// TaskTokens is the service's port for resuming waiting tasks
// (longstory.TaskTokens) on the local runner, with the answers that say no
// task waits on the token any more as domain.ErrTaskGone, as the
// production adapter maps Step Functions' TaskDoesNotExist, TaskTimedOut
// and InvalidToken.
type TaskTokens struct{ Workflow *Workflow }

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
	if errors.Is(err, ErrTaskDoesNotExist) || errors.Is(err, ErrTaskTimedOut) || errors.Is(err, ErrInvalidToken) {
		return fmt.Errorf("%w: %v", domain.ErrTaskGone, err)
	}
	return err
}
