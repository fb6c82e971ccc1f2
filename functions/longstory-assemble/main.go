// Command longstory-assemble is a task of the long-form workflow: it joins the scenes and narration into one mp4 with ffmpeg.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	steps := prod.Must(prod.Steps(context.Background(), prod.Logger(), prod.StepNeeds{Files: true}))
	lambda.Start(steps.Assemble)
}
