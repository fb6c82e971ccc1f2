// Command longstory-check-scene is the Lambda function of a workflow task: reads one scene's job and keeps the finished clip.
// prod.CheckScene says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-check-scene", prod.CheckScene))
}
