// Command finalize is the Lambda function of a workflow task: marks the video completed and captures its credits.
// lambdawiring.Finalize says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("finalize", lambdawiring.Finalize))
}
