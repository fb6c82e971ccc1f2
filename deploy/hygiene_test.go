package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// statefulTypes hold what a stack deletion or a resource replacement must
// never take with it.
var statefulTypes = []string{"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::SecretsManager::Secret"}

func TestStatefulResourcesAreRetained(t *testing.T) {
	found := 0
	for _, name := range sortedKeys(tmpl(t).Resources) {
		r := tmpl(t).Resources[name]
		stateful := false
		for _, typ := range statefulTypes {
			stateful = stateful || r.Type == typ
		}
		if !stateful {
			continue
		}
		found++
		if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
			t.Errorf("%s (%s): DeletionPolicy %q, UpdateReplacePolicy %q; want Retain for both, so no deletion or replacement loses its data", name, r.Type, r.DeletionPolicy, r.UpdateReplacePolicy)
		}
	}
	if found < 11 {
		t.Errorf("found %d tables, buckets and secrets; want the 9 tables, the output bucket and the tokens secret", found)
	}
}

// Two stacks (dev and prod) in one account and region must not publish
// versions of one layer name.
func TestTheLayerIsNamedPerStack(t *testing.T) {
	for name, r := range tmpl(t).Resources {
		if r.Type != "AWS::Serverless::LayerVersion" {
			continue
		}
		sub, _ := r.Properties["LayerName"].(map[string]any)
		s, _ := sub["Fn::Sub"].(string)
		if !strings.Contains(s, "${AWS::StackName}") {
			t.Errorf("%s: LayerName %s does not name its stack; every stage would publish versions of one layer", name, show(r.Properties["LayerName"]))
		}
	}
}

// runSizeCheck runs scripts/check-file-sizes.sh in a new repository that
// tracks one file of the given size.
func runSizeCheck(t *testing.T, size int) (string, error) {
	t.Helper()
	script, err := filepath.Abs("../scripts/check-file-sizes.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "blob.bin"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "blob.bin")
	cmd := exec.Command(script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// make test refuses a tracked file over 1 MB (a 20 MB build of the
// authorizer was once committed at the root).
func TestMakeTestRefusesATrackedFileOver1MB(t *testing.T) {
	if out, err := runSizeCheck(t, 2<<20); err == nil || !strings.Contains(out, "blob.bin is 2097152 bytes") {
		t.Errorf("a tracked 2 MB file passed the check (%v):\n%s", err, out)
	}
	if out, err := runSizeCheck(t, 100<<10); err != nil {
		t.Errorf("a tracked 100 KB file failed the check: %v\n%s", err, out)
	}
	script, err := os.ReadFile("../scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nscripts/check-file-sizes.sh\n") {
		t.Error("scripts/test.sh (make test) does not run scripts/check-file-sizes.sh")
	}
}
