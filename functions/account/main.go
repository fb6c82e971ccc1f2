// Command account is the Lambda function of GET /api/account.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("account", prod.Account))
}
