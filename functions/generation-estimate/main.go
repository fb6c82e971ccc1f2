// Command generation-estimate is the Lambda function of POST /api/generations/estimate.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("generation-estimate", storewiring.GenerationEstimate))
}
