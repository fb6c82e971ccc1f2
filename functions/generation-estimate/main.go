// Command estimate is the Lambda function of POST /api/generations/estimate.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("estimate", prod.GenerationEstimate))
}
