// Command assemble is the Lambda function of a workflow task: joins scenes and narration into one mp4 with ffmpeg.
// lambdawiring.Assemble says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("assemble", lambdawiring.Assemble))
}
