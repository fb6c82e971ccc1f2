// Command file-create is the Lambda function of POST /api/files: a file id
// and a presigned URL to upload the file's bytes to.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("file-create", lambdawiring.FileCreate))
}
