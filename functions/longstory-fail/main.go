// Command longstory-fail is a task of the long-form workflow: it marks the video failed and releases its credits.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	steps := prod.Must(prod.Steps(context.Background(), prod.Logger(), prod.StepNeeds{Store: true}))
	lambda.Start(steps.MarkFailed)
}
