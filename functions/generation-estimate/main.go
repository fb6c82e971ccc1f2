// Command generation-estimate is the Lambda function of POST /api/generations/estimate.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("generation-estimate", lambdawiring.GenerationEstimate))
}
