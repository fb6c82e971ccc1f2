// Command long-story-status is the Lambda function of GET /api/long-story/videos/{videoId}.
// lambdawiring.LongStoryStatus says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-status", lambdawiring.LongStoryStatus))
}
