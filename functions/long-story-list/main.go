// Command longstory-list is the Lambda function of GET /api/long-story/videos, the caller's long videos.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-list", prod.LongStoryList))
}
