// Command event-stream is the Lambda function behind the stream function
// URL (InvokeMode RESPONSE_STREAM): the progress streams GET
// /api/generations/{id}/events and GET
// /api/long-story/videos/{videoId}/events, answered as text/event-stream.
// storewiring.EventStream says what it wires. aws-lambda-go streams an
// answer of type *events.LambdaFunctionURLStreamingResponse through the
// runtime API on provided.al2023.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("event-stream", storewiring.EventStream))
}
