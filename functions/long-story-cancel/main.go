// Command long-story-cancel is the Lambda function of POST /api/long-story/videos/{videoId}/cancel.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-cancel", lambdawiring.LongStoryCancel))
}
