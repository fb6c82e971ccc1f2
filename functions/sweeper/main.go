// Command sweeper runs on a schedule and settles holds left open by crashes:
// work finished, failed, past its deadline, or never recorded.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/ledger"
	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	log := prod.Logger()
	cfg := prod.Must(prod.AWSConfig(context.Background()))
	sweeper := &ledger.Sweeper{Store: prod.Store(cfg), Log: log}
	lambda.Start(func(ctx context.Context, _ events.EventBridgeEvent) (ledger.SweepReport, error) {
		return sweeper.Sweep(ctx)
	})
}
