package lambdawiring

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/narration"
	"github.com/mediagen-dev/mediagen/shared/s3bucket"
	"github.com/mediagen-dev/mediagen/shared/workflow"
)

// EnvStateMachineARN names the long-form state machine.
const EnvStateMachineARN = "STATE_MACHINE_ARN"

// longStoryWorkflow is the long-form state machine, for the routes that
// start and stop its executions.
func longStoryWorkflow(cfg aws.Config) (*workflow.StepFunctions, error) {
	arn, err := required(EnvStateMachineARN)
	if err != nil {
		return nil, err
	}
	return &workflow.StepFunctions{Client: sfn.NewFromConfig(cfg), StateMachineARN: arn}, nil
}

// stepPart wires one adapter of the workflow's task steps.
type stepPart func(ctx context.Context, cfg aws.Config, s *longstory.Steps) error

// Steps wires the workflow's task steps with only the adapters a function
// needs. Each part is a function of its own, so a step's binary links only
// the clients of the parts it names.
func Steps(ctx context.Context, log *slog.Logger, parts ...stepPart) (*longstory.Steps, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	s := &longstory.Steps{FFmpeg: ffmpeg.Runner{Timeout: 10 * time.Minute}, WorkDir: os.TempDir(), Log: log}
	for _, part := range parts {
		if err := part(ctx, cfg, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func stepBucket(cfg aws.Config) (*s3bucket.Bucket, error) {
	name, err := required(EnvOutputBucket)
	if err != nil {
		return nil, err
	}
	base, err := required(EnvMediaBaseURL)
	if err != nil {
		return nil, err
	}
	return s3bucket.New(s3.NewFromConfig(cfg), name, base), nil
}

// withFiles: the output bucket, for steps that read and write files.
func withFiles(_ context.Context, cfg aws.Config, s *longstory.Steps) (err error) {
	s.Files, err = stepBucket(cfg)
	return err
}

// withUpstream: the upstreams' clients.
func withUpstream(ctx context.Context, cfg aws.Config, s *longstory.Steps) (err error) {
	s.Upstream, err = Upstreams(ctx, cfg)
	return err
}

// withNotifier: the webhook queue, for the steps that end a video.
func withNotifier(_ context.Context, cfg aws.Config, s *longstory.Steps) error {
	n, err := Notifier(cfg)
	s.Notifier = n
	return err
}

// withNarrator: Amazon Polly.
func withNarrator(_ context.Context, cfg aws.Config, s *longstory.Steps) error {
	s.Narrator = narration.Polly{Client: polly.NewFromConfig(cfg)}
	return nil
}

// withStore: the records.
func withStore(_ context.Context, cfg aws.Config, s *longstory.Steps) error {
	s.Store = Store(cfg)
	return nil
}

// withSlots: the upstreams' caps, which scenes share with generations.
func withSlots(_ context.Context, cfg aws.Config, s *longstory.Steps) error {
	s.Slots = Store(cfg)
	return nil
}

// withPollQueue: the poller's queue, which watches each scene's job.
func withPollQueue(_ context.Context, cfg aws.Config, s *longstory.Steps) error {
	q, err := pollQueue(cfg)
	s.Queue = q
	return err
}

// withTaskTokens: Step Functions, to resume a scene's waiting task.
func withTaskTokens(_ context.Context, cfg aws.Config, s *longstory.Steps) error {
	s.Tokens = &workflow.TaskTokens{Client: sfn.NewFromConfig(cfg)}
	return nil
}
