// Command long-story-voices is the Lambda function of
// GET /api/long-story/voices, the narration voices of a language.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-voices", lambdawiring.LongStoryVoices))
}
