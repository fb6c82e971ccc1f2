package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen"
)

func TestFunctionFolderIsTheLogicalIDInKebabCase(t *testing.T) {
	for id, want := range map[string]string{
		"GenerateFunction":           "generate",
		"GenerationEstimateFunction": "generation-estimate",
		"LongStoryCreateFunction":    "long-story-create",
		"OpenApiFunction":            "open-api",
		"MarkFailedFunction":         "mark-failed",
	} {
		if got := mediagen.FunctionFolder(id); got != want {
			t.Errorf("FunctionFolder(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestEveryFunctionOfTheTemplateIsBuiltFromItsDerivedFolder: for every
// function of template.yaml, functions/<kebab(LogicalId minus Function)>
// holds its main.go, the functions table says so, and the target sam build
// runs (make build-<LogicalId>) builds that folder.
func TestEveryFunctionOfTheTemplateIsBuiltFromItsDerivedFolder(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is needed: sam build runs the Makefile's build-<LogicalId> targets (%v)", err)
	}
	ids := ofType(tmpl(t), "AWS::Serverless::Function", "AWS::Lambda::Function")
	if len(ids) == 0 {
		t.Fatal("template.yaml has no function")
	}
	for _, id := range ids {
		folder := mediagen.FunctionFolder(id)
		if _, err := os.Stat(filepath.Join("..", "functions", folder, "main.go")); err != nil {
			t.Errorf("%s: functions/%s/main.go: %v", id, folder, err)
		}
		if i := slices.IndexFunc(functions, func(f struct{ ID, Folder string }) bool { return f.ID == id }); i < 0 {
			t.Errorf("%s is not in the functions table", id)
		} else if functions[i].Folder != folder {
			t.Errorf("the functions table builds %s from functions/%s, want functions/%s", id, functions[i].Folder, folder)
		}
		out, err := exec.Command(makeBin, "-s", "-n", "-C", "..", "build-"+id, "ARTIFACTS_DIR=/ARTIFACTS").CombinedOutput()
		if err != nil {
			t.Errorf("Makefile: make build-%s fails: %v\n%s", id, err, out)
		} else if !strings.Contains(string(out), "-o /ARTIFACTS/bootstrap ./functions/"+folder+"\n") {
			t.Errorf("Makefile: build-%s runs %q, which does not build ./functions/%s", id, out, folder)
		}
	}
}
