// Command sweeper is the Lambda function of on a schedule: settles holds left open by crashes.
// storewiring.Sweeper says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("sweeper", storewiring.Sweeper))
}
