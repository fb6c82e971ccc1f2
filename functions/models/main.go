// Command models is the Lambda function of GET /api/models, the public
// catalog.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("models", storewiring.Models))
}
