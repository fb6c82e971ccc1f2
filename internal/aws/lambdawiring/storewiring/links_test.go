package storewiring

import (
	"os/exec"
	"strings"
	"testing"
)

// The functions wired here link this package and not lambdawiring, so
// that their binaries run none of the other AWS clients' package
// initializers (docs/performance.md#cold-starts): this package must not
// import them. (The deploy tests check that those functions' main.go call
// this package's constructors.)
func TestLinksNoAWSClientButDynamoDB(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/aws/aws-sdk-go-v2/service/") {
			svc := strings.Split(strings.TrimPrefix(dep, "github.com/aws/aws-sdk-go-v2/service/"), "/")[0]
			// dynamodbstreams: its types are linked by the DynamoDB
			// attribute-value package, not a client; internal: shared code.
			if svc != "dynamodb" && svc != "dynamodbstreams" && svc != "internal" {
				t.Errorf("storewiring links %s", dep)
			}
		}
		if dep == "github.com/mediagen-dev/mediagen/internal/aws/lambdawiring" {
			t.Errorf("storewiring links lambdawiring, and with it every AWS client")
		}
	}
}
