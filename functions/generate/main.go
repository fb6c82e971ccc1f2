// Command generate is the Lambda function of POST /api/generations/generate: validate, price, hold, record, submit, enqueue the first poll.
// prod.Functions says what it wires.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Must(prod.Handler(context.Background(), "generate")))
}
