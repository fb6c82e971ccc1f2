package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeBuild runs the Makefile's build-<LogicalId> target as sam build does,
// in a copy of the Makefile in dir, with GO=true so that no compiler runs:
// what is checked is the routing file's step.
func makeBuild(t *testing.T, dir string, extra ...string) (string, error) {
	t.Helper()
	art := filepath.Join(dir, "artifacts")
	args := append([]string{"-s", "-C", dir, "build-ModelsFunction", "ARTIFACTS_DIR=" + art, "GO=true"}, extra...)
	out, err := exec.Command("make", args...).CombinedOutput()
	return string(out), err
}

// A stack built without routing.json would deploy and then fail every
// routed request (the embedded routing file names the local simulator,
// which Lambda refuses): sam build stops with the fix instead, and a
// routing.json at the root goes into every function. make build, which
// checks the binaries only, builds without one.
func TestSamBuildRefusesToBuildWithoutARoutingFile(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := makeBuild(t, dir)
	if err == nil {
		t.Fatalf("sam build's make target succeeded without routing.json:\n%s", out)
	}
	for _, want := range []string{"routing.json is missing", "docs/deploy.md#the-routing-file"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts")); err == nil {
		t.Error("something was built before the routing file was checked")
	}

	if out, err := makeBuild(t, dir, "ROUTING_OPTIONAL=1"); err != nil {
		t.Errorf("make build's check of the binaries needs a routing file: %v\n%s", err, out)
	}

	const file = `{"upstreams":{}}`
	if err := os.WriteFile(filepath.Join(dir, "routing.json"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := makeBuild(t, dir); err != nil {
		t.Fatalf("with routing.json: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "artifacts", "routing.json")); err != nil || string(got) != file {
		t.Errorf("the function's package has routing.json %q (%v), want the root's", got, err)
	}

	// docs/deploy.md has the step the message points to.
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "\n## The routing file\n") {
		t.Error(`docs/deploy.md has no section "## The routing file", which the build's failure points to`)
	}
}
