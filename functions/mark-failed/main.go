// Command mark-failed is the Lambda function of a workflow task: marks the video failed and releases its credits.
// lambdawiring.MarkFailed says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("mark-failed", lambdawiring.MarkFailed))
}
