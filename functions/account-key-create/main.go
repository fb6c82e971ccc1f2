// Command account-key-create is the Lambda function of POST /api/account/keys.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("account-key-create", storewiring.AccountKeyCreate))
}
