// Command long-story-estimate is the Lambda function of POST /api/long-story/videos/estimate.
// storewiring.LongStoryEstimate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("long-story-estimate", storewiring.LongStoryEstimate))
}
