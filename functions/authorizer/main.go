// Command authorizer is the HTTP API's Lambda authorizer: it checks the API
// key (or, on the status routes, the identity-provider token) once per
// request and hands the route the account or the reason it was refused.
// storewiring.Authorizer says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/shared/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("authorizer", storewiring.Authorizer))
}
