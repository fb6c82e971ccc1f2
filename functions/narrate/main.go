// Command narrate is the Lambda function of a workflow task: speaks each scene's narration with Amazon Polly.
// lambdawiring.Narrate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("narrate", lambdawiring.Narrate))
}
