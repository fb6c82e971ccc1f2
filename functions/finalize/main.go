// Command longstory-finalize is the Lambda function of a workflow task: marks the video completed and captures its credits.
// prod.Finalize says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-finalize", prod.Finalize))
}
