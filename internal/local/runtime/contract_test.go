package runtime_test

// The contract test (api/contracttest): every request this package's tests
// send to /api/ and every answer they get is validated against
// api/openapi.yaml, so the document cannot drift from the code; a run of the
// whole package also fails unless every operation and webhook of the
// document was exercised with a success.

import (
	"net/http"
	"os"
	"testing"

	"github.com/mediagen-dev/mediagen/api/contracttest"
)

func TestMain(m *testing.M) { os.Exit(contracttest.Main(m, true)) }

// malformedBody marks a request a test sends malformed on purpose: its
// request is not validated (the document describes the requests to send),
// its answer still is (the document describes the errors it answers).
type malformedBody struct{ body any }

// malformed wraps call's body (nil for none) to mark the request as
// deliberately not matching the document: a bad body, query or path, or
// missing or wrong credentials.
func malformed(body any) any { return malformedBody{body} }

// forContract tells the contract transport which test sends req and whether
// it is malformed on purpose.
func forContract(t testing.TB, req *http.Request, malformed bool) *http.Request {
	return contracttest.Request(t, req, malformed)
}

// markMalformed is forContract for requests a test builds itself.
func markMalformed(t testing.TB, req *http.Request) *http.Request { return forContract(t, req, true) }
