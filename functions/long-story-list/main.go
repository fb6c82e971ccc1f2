// Command long-story-list is the Lambda function of GET /api/long-story/videos, the caller's long videos.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("long-story-list", storewiring.LongStoryList))
}
