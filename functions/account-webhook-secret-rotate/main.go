// Command account-webhook-secret-rotate is the Lambda function of POST /api/account/webhook-secret/rotate.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("account-webhook-secret-rotate", storewiring.AccountWebhookSecretRotate))
}
