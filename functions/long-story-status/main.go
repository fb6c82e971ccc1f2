// Command longstory-status is the Lambda function of GET /api/long-story/videos/{videoId}.
// prod.LongStoryStatus says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-status", prod.LongStoryStatus))
}
