// Command long-story-create is the Lambda function of POST /api/long-story/videos: hold, record, start the workflow.
// lambdawiring.LongStoryCreate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-create", lambdawiring.LongStoryCreate))
}
