// Command open-api is the Lambda function of GET /api/openapi.json, the contract.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("open-api", storewiring.OpenAPI))
}
