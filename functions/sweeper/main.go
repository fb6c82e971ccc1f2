// Command sweeper is the Lambda function of on a schedule: settles holds left open by crashes.
// lambdawiring.Sweeper says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("sweeper", lambdawiring.Sweeper))
}
