// Command status is the Lambda function of GET /api/generations/status/{id}: the generation status view.
// lambdawiring.Status says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("status", lambdawiring.Status))
}
