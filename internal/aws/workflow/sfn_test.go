package workflow

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// tokenClient answers every SendTask* call with err.
type tokenClient struct{ err error }

func (c tokenClient) SendTaskSuccess(context.Context, *sfn.SendTaskSuccessInput, ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	return &sfn.SendTaskSuccessOutput{}, c.err
}

func (c tokenClient) SendTaskFailure(context.Context, *sfn.SendTaskFailureInput, ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	return &sfn.SendTaskFailureOutput{}, c.err
}

func (c tokenClient) SendTaskHeartbeat(context.Context, *sfn.SendTaskHeartbeatInput, ...func(*sfn.Options)) (*sfn.SendTaskHeartbeatOutput, error) {
	return &sfn.SendTaskHeartbeatOutput{}, c.err
}

// TestTokenAnswersThatMeanNoTaskWaitsAreErrTaskGone: the poller stops a
// scene's chain of polls on these, and retries on anything else.
func TestTokenAnswersThatMeanNoTaskWaitsAreErrTaskGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		gone bool
	}{
		{"accepted", nil, false},
		{"task does not exist", &types.TaskDoesNotExist{}, true},
		{"task timed out", &types.TaskTimedOut{}, true},
		{"invalid token", &types.InvalidToken{}, true},
		{"throttled", &types.InvalidOutput{}, false},
		{"network", errors.New("connection reset"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens := &TaskTokens{Client: tokenClient{err: tc.err}}
			for op, err := range map[string]error{
				"success":   tokens.SendTaskSuccess(context.Background(), "tok", []byte(`{}`)),
				"failure":   tokens.SendTaskFailure(context.Background(), "tok", "SceneFailedError", "no clip"),
				"heartbeat": tokens.SendTaskHeartbeat(context.Background(), "tok"),
			} {
				if got := errors.Is(err, domain.ErrTaskGone); got != tc.gone {
					t.Errorf("%s: errors.Is(%v, ErrTaskGone) = %v, want %v", op, err, got, tc.gone)
				}
				if (err == nil) != (tc.err == nil) {
					t.Errorf("%s: err = %v, want an error: %v", op, err, tc.err != nil)
				}
			}
		})
	}
}

func TestClipKeepsValidUTF8(t *testing.T) {
	if got := clip("héllo", 2); got != "h" {
		t.Fatalf("clip cut a character in half: %q", got)
	}
	if got := clip("short", 10); got != "short" {
		t.Fatalf("clip changed a short text: %q", got)
	}
}
