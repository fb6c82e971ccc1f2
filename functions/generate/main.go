// Command generate is the Lambda function of POST /api/generations/generate: validate, price, hold, record, submit, enqueue the first poll.
// prod.Generate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("generate", prod.Generate))
}
