// Command generation-cancel is the Lambda function of POST /api/generations/{id}/cancel.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("generation-cancel", lambdawiring.GenerationCancel))
}
