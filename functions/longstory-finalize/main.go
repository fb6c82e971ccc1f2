// Command longstory-finalize is a task of the long-form workflow: it marks the video completed and captures its credits.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	steps := prod.Must(prod.Steps(context.Background(), prod.Logger(), prod.StepNeeds{Files: true, Store: true}))
	lambda.Start(steps.Finalize)
}
