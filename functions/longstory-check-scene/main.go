// Command longstory-check-scene is the Lambda function of a workflow task: reads one scene's job and keeps the finished clip.
// prod.Functions says what it wires.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Must(prod.Handler(context.Background(), "longstory-check-scene")))
}
