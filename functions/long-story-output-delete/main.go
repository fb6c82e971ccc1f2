// Command long-story-output-delete is the Lambda function of DELETE /api/long-story/videos/{videoId}/output.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("long-story-output-delete", lambdawiring.LongStoryOutputDelete))
}
