// Command account-key-revoke is the Lambda function of DELETE /api/account/keys/{prefix}.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("account-key-revoke", storewiring.AccountKeyRevoke))
}
