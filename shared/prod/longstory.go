package prod

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/polly"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/mediagen-dev/mediagen/shared/ffmpeg"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/media"
	"github.com/mediagen-dev/mediagen/shared/narration"
	"github.com/mediagen-dev/mediagen/shared/upstream"
	"github.com/mediagen-dev/mediagen/shared/workflow"
)

// EnvStateMachineARN names the long-form state machine.
const EnvStateMachineARN = "STATE_MACHINE_ARN"

// LongStoryService wires the long-form routes; withWorkflow is true for the
// create function, the only one that starts executions.
func LongStoryService(cfg aws.Config, log *slog.Logger, withWorkflow bool) (*longstory.Service, error) {
	prices, err := Prices()
	if err != nil {
		return nil, err
	}
	svc := &longstory.Service{Store: Store(cfg), Prices: prices, Log: log}
	if withWorkflow {
		arn, err := required(EnvStateMachineARN)
		if err != nil {
			return nil, err
		}
		svc.Workflow = &workflow.StepFunctions{Client: sfn.NewFromConfig(cfg), StateMachineARN: arn}
	}
	return svc, nil
}

// StepNeeds says which adapters a workflow step uses.
type StepNeeds struct {
	Upstream, Copier, Files, Narrator, Store bool
}

// Steps wires the workflow's task steps with only the adapters a function
// needs.
func Steps(ctx context.Context, log *slog.Logger, needs StepNeeds) (*longstory.Steps, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	s := &longstory.Steps{FFmpeg: ffmpeg.Runner{Timeout: 10 * time.Minute}, WorkDir: os.TempDir(), Log: log}
	var bucket *media.S3Bucket
	if needs.Files || needs.Copier {
		name, err := required(EnvOutputBucket)
		if err != nil {
			return nil, err
		}
		base, err := required(EnvMediaBaseURL)
		if err != nil {
			return nil, err
		}
		bucket = media.NewS3Bucket(s3.NewFromConfig(cfg), name, base)
		s.Files = bucket
	}
	if needs.Upstream || needs.Copier {
		base, err := required(EnvUpstreamBaseURL)
		if err != nil {
			return nil, err
		}
		if needs.Upstream {
			token, err := upstreamToken(ctx, cfg)
			if err != nil {
				return nil, err
			}
			s.Upstream = &upstream.Client{BaseURL: base, Token: token, HTTP: &http.Client{Timeout: 20 * time.Second}}
		}
		if needs.Copier {
			if s.Copier, err = copier(bucket, base); err != nil {
				return nil, err
			}
		}
	}
	if needs.Narrator {
		s.Narrator = narration.Polly{Client: polly.NewFromConfig(cfg)}
	}
	if needs.Store {
		s.Store = Store(cfg)
	}
	return s, nil
}
