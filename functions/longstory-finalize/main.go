// Command longstory-finalize is the Lambda function of a workflow task: marks the video completed and captures its credits.
// prod.Functions says what it wires.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Must(prod.Handler(context.Background(), "longstory-finalize")))
}
