// Package shared_test checks the layering of the shared packages.
package shared_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The use cases and the domain own their ports and link no adapter: no AWS
// SDK or Lambda package is among their dependencies, so they build, test
// and read without them. Adapters (s3bucket, sqsqueue, sqsbatch,
// lambdahttp, workflow, dynamostore, narration) and the wirings
// (lambdawiring, local/runtime) are the only packages that do.
func TestUseCasesLinkNoAWSPackage(t *testing.T) {
	pure := []string{
		"generation", "longstory", "httpapi", "routes", "apiview", "accounts", "webhook", "sweeper",
		"domain", "catalog", "pricing", "routing", "media", "store", "upstream", "apikey", "clock",
	}
	for _, p := range pure {
		t.Run(p, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "github.com/mediagen-dev/mediagen/shared/"+p).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				if strings.HasPrefix(dep, "github.com/aws/") {
					t.Errorf("shared/%s links %s", p, dep)
				}
			}
		})
	}
}
