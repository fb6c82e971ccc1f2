// Command models is the Lambda function of GET /api/models, the public
// catalog.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("models", prod.Models))
}
