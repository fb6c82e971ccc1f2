// Command account-transactions is the Lambda function of
// GET /api/account/transactions.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("account-transactions", storewiring.AccountTransactions))
}
