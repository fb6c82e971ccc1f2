// Command webhooks is the Lambda function of the webhook queue's consumer: it delivers signed webhooks.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("webhooks", lambdawiring.Webhooks))
}
