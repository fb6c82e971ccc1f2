// Command authorizer is the HTTP API's Lambda authorizer: it checks the API
// key (or the identity-provider token, which only the status routes then
// take) and hands the route the account or the reason it was refused. API
// Gateway invokes it for an Authorization header whose answer it has not
// cached (template.yaml's AuthorizerCacheTtl), and the answer serves every
// route. storewiring.Authorizer says what it wires.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring/storewiring"
)

func main() {
	lambda.Start(storewiring.Build("authorizer", storewiring.Authorizer))
}
