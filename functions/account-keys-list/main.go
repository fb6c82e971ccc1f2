// Command account-keys-list is the Lambda function of GET /api/account/keys.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("account-keys-list", storewiring.AccountKeysList))
}
