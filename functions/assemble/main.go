// Command longstory-assemble is the Lambda function of a workflow task: joins scenes and narration into one mp4 with ffmpeg.
// prod.Assemble says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-assemble", prod.Assemble))
}
