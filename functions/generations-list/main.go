// Command generations-list is the Lambda function of GET /api/generations, the caller's generations.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("generations-list", storewiring.GenerationsList))
}
