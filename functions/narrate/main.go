// Command longstory-narrate is the Lambda function of a workflow task: speaks each scene's narration with Amazon Polly.
// prod.Narrate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-narrate", prod.Narrate))
}
