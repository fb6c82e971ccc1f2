// Command poller is the Lambda function of behind the poll queue: reads upstream jobs, keeps finished outputs, settles holds.
// prod.Functions says what it wires.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Must(prod.Handler(context.Background(), "poller")))
}
