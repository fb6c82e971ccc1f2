// Command longstory-create is the Lambda function of POST /api/long-story/videos: hold, record, start the workflow.
// prod.LongStoryCreate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-create", prod.LongStoryCreate))
}
