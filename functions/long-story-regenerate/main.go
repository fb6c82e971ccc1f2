// Command long-story-regenerate is the Lambda function of POST /api/long-story/videos/{videoId}/scenes/{n}/regenerate: hold the scene's price, record the regenerate, start its execution.
// lambdawiring.LongStoryRegenerate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-regenerate", lambdawiring.LongStoryRegenerate))
}
