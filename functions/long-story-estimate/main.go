// Command long-story-estimate is the Lambda function of POST /api/long-story/videos/estimate.
// lambdawiring.LongStoryEstimate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-estimate", lambdawiring.LongStoryEstimate))
}
