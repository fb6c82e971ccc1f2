package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// finished is what each client prints: every generation's final status and
// outputs, the image's first, then the video's.
type finished []struct {
	Status string   `json:"status"`
	Output []string `json:"output"`
}

// checkFinished fails the test unless a client's printout says both
// generations completed, the image with an image file and the video with an
// mp4.
func checkFinished(t *testing.T, client, printed string) {
	t.Helper()
	var got finished
	if err := json.Unmarshal([]byte(printed), &got); err != nil {
		t.Fatalf("%s printed %q: %v", client, printed, err)
	}
	wantExt := []string{".png", ".mp4"} // theta-4-fast's default format is png
	if len(got) != len(wantExt) {
		t.Fatalf("%s finished %d generations, want %d: %s", client, len(got), len(wantExt), printed)
	}
	for i, g := range got {
		if g.Status != "completed" || len(g.Output) != 1 || filepath.Ext(g.Output[0]) != wantExt[i] {
			t.Errorf("%s: generation %d ended %s with %v, want completed with one %s", client, i+1, g.Status, g.Output, wantExt[i])
		}
	}
}

// localRuntime starts a local runtime and answers the environment a client
// reads it from.
func localRuntime(t *testing.T) []string {
	rt := runtimetest.Start(t, runtime.Config{})
	return []string{"MEDIAGEN_BASE_URL=" + rt.BaseURL, "MEDIAGEN_API_KEY=" + rt.Dev.APIKey}
}

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

// TestGeneratedTypeScriptClientsCreateAndPoll generates types from openapi.yaml with
// openapi-typescript (its default flags) and a client with
// @hey-api/openapi-ts, then compiles with tsc a client of each
// (testdata/types/*.ts) that creates an image and a video generation with
// their variants' inputs and polls them, and runs both against a local
// runtime; each also holds bodies with a field the variant lacks, a value
// it does not take and a required field left out, marked @ts-expect-error,
// so the types must refuse them (tsc fails on an unused @ts-expect-error).
func TestGeneratedTypeScriptClientsCreateAndPoll(t *testing.T) {
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

	// The same sources as CommonJS, which node loads without extensions,
	// run against the local runtime: the bodies the types accept are the
	// ones the service takes.
	run(t, ctx, dir, nil, tsc, "-p", ".", "--noEmit", "false", "--outDir", "js", "--module", "commonjs", "--moduleResolution", "node10")
	env := localRuntime(t)
	for _, client := range []string{"openapi-typescript", "hey-api"} {
		printed := run(t, ctx, dir, env, "node", "-e",
			`require("./js/`+client+`.js").main().then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); })`)
		checkFinished(t, client, printed)
	}
}

// TestGeneratedGoClientCreatesAndPolls generates a client with oapi-codegen and builds a
// program (testdata/types/oapi-codegen/main.go) that creates an image and
// a video generation through their variants' request types and polls them,
// and runs it against a local runtime; a body with a field its variant
// lacks must not build. skip-prune keeps
// the schemas only the document's webhooks use: oapi-codegen writes the
// webhooks' parameters but prunes what they refer to, so without it the
// generated package does not build (docs/api.md says so to users).
func TestGeneratedGoClientCreatesAndPolls(t *testing.T) {
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
	bin := filepath.Join(dir, "client")
	run(t, ctx, module, env, "go", "build", "-o", bin, ".")
	checkFinished(t, "oapi-codegen", run(t, ctx, module, localRuntime(t), bin))

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
