// Command longstory-submit-scene is the Lambda function of a workflow task: starts one scene's clip upstream.
// prod.SubmitScene says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-submit-scene", prod.SubmitScene))
}
