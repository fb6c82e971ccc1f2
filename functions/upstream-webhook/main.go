// Command upstream-webhook is the Lambda function of POST /api/upstream/webhook, the provider's completion callback.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("upstream-webhook", lambdawiring.UpstreamWebhook))
}
