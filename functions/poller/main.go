// Command poller is the Lambda function of behind the poll queue: reads upstream jobs, keeps finished outputs, settles holds.
// lambdawiring.Poller says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("poller", lambdawiring.Poller))
}
