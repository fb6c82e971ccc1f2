// Command status is the Lambda of GET /api/generations/status/{id}.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	log := prod.Logger()
	cfg := prod.Must(prod.AWSConfig(context.Background()))
	// A lookup needs only the store: no upstream token, queue or bucket.
	svc := &generation.Service{Store: prod.Store(cfg), Log: log}
	routes := &httpapi.Generations{Service: svc, Gate: prod.Gate(cfg, log)}
	lambda.Start(routes.Status())
}
