// Command poller is the Lambda behind the poll queue: it reads upstream jobs,
// copies finished outputs into the bucket and settles holds.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	svc, _, err := prod.GenerationService(context.Background(), prod.Logger(), true)
	prod.Must(svc, err)
	lambda.Start(svc.HandleSQS)
}
