// Command longstory-check-scene is a task of the long-form workflow: it reads one scene's upstream job and keeps the finished clip.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	steps := prod.Must(prod.Steps(context.Background(), prod.Logger(), prod.StepNeeds{Upstream: true, Copier: true}))
	lambda.Start(steps.CheckScene)
}
