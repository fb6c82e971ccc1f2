// Command longstory-status is the Lambda of GET /api/long-story/videos/{videoId}.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	log := prod.Logger()
	cfg := prod.Must(prod.AWSConfig(context.Background()))
	svc := prod.Must(prod.LongStoryService(cfg, log, false))
	routes := &httpapi.LongStories{Service: svc, Gate: prod.Gate(cfg, log)}
	lambda.Start(routes.Status())
}
