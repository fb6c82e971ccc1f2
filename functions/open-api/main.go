// Command openapi is the Lambda function of GET /api/openapi.json, the contract.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("openapi", prod.OpenAPI))
}
