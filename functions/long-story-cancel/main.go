// Command longstory-cancel is the Lambda function of POST /api/long-story/videos/{videoId}/cancel.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-cancel", prod.LongStoryCancel))
}
