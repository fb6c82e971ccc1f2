// Command longstory-narrate is a task of the long-form workflow: it speaks each scene's narration with Amazon Polly.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	steps := prod.Must(prod.Steps(context.Background(), prod.Logger(), prod.StepNeeds{Files: true, Narrator: true}))
	lambda.Start(steps.Narrate)
}
