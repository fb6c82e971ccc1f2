// Command generate is the Lambda function of POST /api/generations/generate: validate, price, hold, record, submit, enqueue the first poll.
// lambdawiring.Generate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("generate", lambdawiring.Generate))
}
