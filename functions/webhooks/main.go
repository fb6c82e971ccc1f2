// Command webhooks is the Lambda function of the webhook queue's consumer: it delivers signed webhooks.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("webhooks", prod.Webhooks))
}
