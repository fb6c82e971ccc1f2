// Command models is the Lambda function of GET /api/models, the public
// catalog. prod.Functions says what it wires.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Must(prod.Handler(context.Background(), "models")))
}
