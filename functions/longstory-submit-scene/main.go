// Command longstory-submit-scene is a task of the long-form workflow: it starts one scene's clip upstream.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	steps := prod.Must(prod.Steps(context.Background(), prod.Logger(), prod.StepNeeds{Upstream: true}))
	lambda.Start(steps.SubmitScene)
}
