// Command submit-scene is the Lambda function of a workflow task: starts one scene's clip upstream.
// lambdawiring.SubmitScene says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("submit-scene", lambdawiring.SubmitScene))
}
