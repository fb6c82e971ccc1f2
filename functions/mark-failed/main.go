// Command longstory-fail is the Lambda function of a workflow task: marks the video failed and releases its credits.
// prod.MarkFailed says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-fail", prod.MarkFailed))
}
