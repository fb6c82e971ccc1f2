// Command status is the Lambda function of GET /api/generations/status/{id}: the generation status view.
// storewiring.Status says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("status", storewiring.Status))
}
