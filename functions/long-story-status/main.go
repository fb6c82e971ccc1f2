// Command long-story-status is the Lambda function of GET /api/long-story/videos/{videoId}.
// storewiring.LongStoryStatus says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("long-story-status", storewiring.LongStoryStatus))
}
