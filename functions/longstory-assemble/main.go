// Command longstory-assemble is the Lambda function of a workflow task: joins scenes and narration into one mp4 with ffmpeg.
// prod.Functions says what it wires.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Must(prod.Handler(context.Background(), "longstory-assemble")))
}
