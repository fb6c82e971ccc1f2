package api_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/shared/testsupport"
)

// The generators a client of the API would run on openapi.yaml, pinned:
// the npm ones by tools/package.json (make deps installs them), oapi-codegen
// by its module version (go run fetches it through the module proxy).
const (
	oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	// oapiRuntime is the module the code oapi-codegen writes imports.
	oapiRuntime = "github.com/oapi-codegen/runtime@v1.9.0"
)

// nodeTool is a tool of tools/node_modules, or the test fails saying how
// to install it.
func nodeTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := testsupport.NodeTool(name)
	if err != nil {
		t.Fatalf("%v; make deps installs the npm tools", err)
	}
	return bin
}

// run runs a command in dir and fails the test with its output when it
// fails.
func run(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) string {
	t.Helper()
	out, err := command(ctx, dir, env, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return out
}

func command(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// copyFiles copies testdata/types/<names> into dir.
func copyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join("testdata", "types", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTypeScriptClientsCompile generates types from openapi.yaml with
// openapi-typescript (its default flags) and a client with
// @hey-api/openapi-ts, then compiles with tsc a client of each
// (testdata/types/*.ts) that creates an image and a video generation with
// their variants' inputs and polls them; each also holds bodies with a
// field the variant lacks, a value it does not take and a required field
// left out, marked @ts-expect-error, so the types must refuse them (tsc
// fails on an unused @ts-expect-error).
func TestTypeScriptClientsCompile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	openapiTS, heyAPI, tsc := nodeTool(t, "openapi-typescript"), nodeTool(t, "openapi-ts"), nodeTool(t, "tsc")
	doc, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFiles(t, dir, "openapi-typescript.ts", "hey-api.ts", "tsconfig.json")
	run(t, ctx, dir, nil, openapiTS, doc, "-o", "schema.ts")
	run(t, ctx, dir, nil, heyAPI, "-i", doc, "-o", "client")
	run(t, ctx, dir, nil, tsc, "-p", ".")
}

// TestGoClientCompiles generates a client with oapi-codegen and builds a
// program (testdata/types/oapi-codegen/main.go) that creates an image and
// a video generation through their variants' request types and polls them;
// a body with a field its variant lacks must not build. skip-prune keeps
// the schemas only the document's webhooks use: oapi-codegen writes the
// webhooks' parameters but prunes what they refer to, so without it the
// generated package does not build (docs/api.md says so to users).
func TestGoClientCompiles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	doc, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFiles(t, dir, "oapi-codegen/main.go")
	module := filepath.Join(dir, "oapi-codegen")
	if err := os.MkdirAll(filepath.Join(module, "mediagenapi"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A module of its own, outside this one: GOFLAGS=-mod=mod lets go
	// fetch oapi-codegen's runtime, as a user's module would.
	env := []string{"GOFLAGS=-mod=mod", "GOWORK=off"}
	if err := os.WriteFile(filepath.Join(module, "go.mod"), []byte("module typescheck\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, module, env, "go", "run", oapiCodegen, "-generate", "types,client,skip-prune", "-package", "mediagenapi",
		"-o", filepath.Join("mediagenapi", "api.gen.go"), doc)
	run(t, ctx, module, env, "go", "get", oapiRuntime)
	run(t, ctx, module, env, "go", "mod", "tidy")
	run(t, ctx, module, env, "go", "vet", ".")
	run(t, ctx, module, env, "go", "build", "-o", os.DevNull, ".")

	// A field theta-4-fast does not have is a compile error.
	wrong, err := os.ReadFile(filepath.Join("testdata", "types", "oapi-codegen", "wrongfield.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(module, "wrongfield.go"), wrong, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := command(ctx, module, env, "go", "build", "-o", os.DevNull, ".")
	if err == nil {
		t.Fatalf("a theta-4-fast input with a duration built; want the request type to refuse it")
	}
	if !strings.Contains(out, "unknown field Duration") {
		t.Errorf("go build failed otherwise than on the unknown field:\n%s", out)
	}
}
