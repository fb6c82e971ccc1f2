// Command authorizer is the HTTP API's Lambda authorizer: it checks the API
// key (or, on the status routes, the identity-provider token) once per
// request and hands the route the account or the reason it was refused.
// lambdawiring.Authorizer says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring"
)

func main() {
	lambda.Start(lambdawiring.Build("authorizer", lambdawiring.Authorizer))
}
