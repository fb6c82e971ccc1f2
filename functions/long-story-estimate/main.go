// Command longstory-estimate is the Lambda function of POST /api/long-story/videos/estimate.
// prod.LongStoryEstimate says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	lambda.Start(prod.Build("longstory-estimate", prod.LongStoryEstimate))
}
