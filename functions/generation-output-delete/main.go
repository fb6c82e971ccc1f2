// Command generation-output-delete is the Lambda function of DELETE /api/generations/{id}/output.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("generation-output-delete", lambdawiring.GenerationOutputDelete))
}
