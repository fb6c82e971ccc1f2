package lambdawiring

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
)

func TestEveryFunctionFolderHasAHandlerAndBuildsOffline(t *testing.T) {
	entries, err := os.ReadDir("../../functions")
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, e := range entries {
		if e.IsDir() {
			folders = append(folders, e.Name())
		}
	}
	if !slices.Equal(folders, FunctionNames()) {
		t.Fatalf("functions/ holds %v, the registry %v", folders, FunctionNames())
	}
	t.Setenv("AWS_REGION", "us-east-1")
	for _, name := range FunctionNames() {
		vars, err := ReadsEnvironment(context.Background(), name)
		if err != nil {
			t.Errorf("%s does not build: %v", name, err)
			continue
		}
		h, err := Handler(context.Background(), name)
		if err == nil {
			// lambda.NewHandler panics on a handler lambda.Start would refuse.
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: not a valid Lambda handler: %v", name, r)
					}
				}()
				lambda.NewHandler(h)
			}()
		}
		t.Logf("%s reads %v", name, vars)
	}
}
