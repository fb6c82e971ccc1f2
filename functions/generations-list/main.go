// Command generations-list is the Lambda function of GET /api/generations, the caller's generations.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("generations-list", lambdawiring.GenerationsList))
}
