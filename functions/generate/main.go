// Command generate is the Lambda of POST /api/generations/generate.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/prod"
)

func main() {
	ctx := context.Background()
	log := prod.Logger()
	svc, cfg, err := prod.GenerationService(ctx, log, false)
	prod.Must(svc, err)
	routes := &httpapi.Generations{Service: svc, Gate: prod.Gate(cfg, log)}
	lambda.Start(routes.Generate())
}
