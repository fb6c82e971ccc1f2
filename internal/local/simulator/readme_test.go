package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// readmeBlocks are the fenced code blocks of a README, in order.
func readmeBlocks(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the client's README: %v", err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```").FindAllStringSubmatch(string(raw), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// readmeStep runs README blocks (by index, each checked to still start as
// expected) in one scope, then a check of the harness's own in that scope
// that prints a JSON line {"readme": name, ...}.
type readmeStep struct {
	name   string
	blocks []int
	starts []string // what each block's code contains, so that a changed README fails clearly
	check  string   // JavaScript run after the blocks, in their scope
	// top runs the blocks in the program's own scope (an ES module's
	// imports, the client the later steps use), not a function of their own.
	top bool
}

// readmeProgram writes the program that runs steps: preamble, then each
// step in an async function of its own, in order.
func readmeProgram(t *testing.T, blocks []string, placeholders map[string]string, preamble string, steps []readmeStep, esm bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(preamble + "\n")
	if !esm {
		b.WriteString("(async () => {\n")
	}
	for _, st := range steps {
		if !st.top {
			fmt.Fprintf(&b, "await (async () => {\n")
		}
		for i, n := range st.blocks {
			if n >= len(blocks) || !strings.Contains(blocks[n], st.starts[i]) {
				t.Fatalf("README block %d is no longer the example %q (%q): update the step %s", n, st.name, st.starts[i], st.name)
			}
			code := blocks[n]
			for from, to := range placeholders {
				code = strings.ReplaceAll(code, from, to)
			}
			fmt.Fprintf(&b, "// README block %d\n%s\n", n, code)
		}
		if st.top {
			fmt.Fprintf(&b, "%s\n", st.check)
		} else {
			fmt.Fprintf(&b, "%s\n})();\n", st.check)
		}
	}
	if !esm {
		b.WriteString("})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });\n")
	}
	return b.String()
}

// runReadme runs a README program in a folder of its own (where the
// clients resolve from tools/node_modules, and path/to/image.png exists
// for the examples that read it) with the providers' hosts pointing at
// the simulator, and answers its {"readme": ...} lines by name. (The
// README's run example calls blob(), which takes the FileOutput's stream:
// the check downloads its url() instead.)
func runReadme(t *testing.T, program string, esm bool, env ...string) map[string]map[string]any {
	t.Helper()
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(root, "tools", "node_modules")
	dir := t.TempDir()
	if err := os.Symlink(tools, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "path", "to"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "path", "to", "image.png"), []byte("\x89PNG\r\n\x1a\n a picture"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "readme.cjs"
	if esm {
		name = "readme.mjs"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	hosts, err := filepath.Abs(filepath.Join("testdata", "provider-hosts.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--require", hosts, name)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("program:\n%s\noutput:\n%s", program, stdout.String())
	if err != nil {
		t.Fatalf("the README examples failed (%v):\n%s", err, stderr.String())
	}
	got := map[string]map[string]any{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			if name, ok := v["readme"].(string); ok {
				got[name] = v
			}
		}
	}
	return got
}

// The replicate README's models, with the version ids and inputs its
// examples use.
var replicateReadmeModels = []readmeModel{
	{"stability-ai/stable-diffusion", "27b93a2413e7f36cd83da926f3656280b2931564ff050bf9575f1fdf9bcd7478", map[string]string{"prompt": "string"}},
	{"nightmareai/real-esrgan", "42fed1c4974146d4d2414e2be2c5277c7fcf05fcc3a73abf41610695738c1d7b", map[string]string{"image": "string"}},
	{"stability-ai/sdxl", "8beff3369e81422112d93b89ca01426147de542cd4684c244b673b105188fe5f", map[string]string{"prompt": "string"}},
}

// TestTheReplicateREADMEExamplesRunAgainstTheSimulator runs the examples of
// npm replicate@1.4.0's README as written: the client from the README's
// CommonJS require, the token from REPLICATE_API_TOKEN (the README's "my
// api token" placeholder is replaced by it), api.replicate.com resolving
// to the simulator. Left out, with their reason: the TypeScript blocks
// (Node runs no TypeScript), the web-framework handlers (Hono, Next.js),
// the webhook example (it names https://my.app, a real host), stream
// (a language model's text), trainings and deployments (no such thing
// here), the FileOutput fragment (it returns a Response, for a handler),
// and the signatures with placeholder arguments.
func TestTheReplicateREADMEExamplesRunAgainstTheSimulator(t *testing.T) {
	_, base, ca := contractSimulator(t, replicateReadmeModels...)
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, filepath.Join(root, "tools", "node_modules", "replicate", "README.md"))
	if !strings.Contains(blocks[1], `const Replicate = require("replicate");`) {
		t.Fatalf("README block 1 no longer requires the client: %q", blocks[1])
	}
	steps := []readmeStep{
		{name: "client", blocks: []int{2}, starts: []string{"new Replicate("}, top: true},
		{name: "run", blocks: []int{3}, starts: []string{"stability-ai/stable-diffusion:27b93a"},
			check: `console.log(JSON.stringify({ readme: "run", url: String(output.url()), size: (await (await fetch(output.url())).arrayBuffer()).byteLength }));`},
		{name: "background", blocks: []int{4, 5, 6}, starts: []string{"replicate.predictions.create", "replicate.predictions.get", "replicate.wait"},
			check: `console.log(JSON.stringify({ readme: "background", status: prediction.status, output: prediction.output }));`},
		{name: "file input", blocks: []int{7}, starts: []string{`image: await fs.readFile("path/to/image.png")`},
			check: `console.log(JSON.stringify({ readme: "file input", url: String(output.url()), image: (await replicate.predictions.list()).results[0].input.image }));`},
		{name: "run sdxl", blocks: []int{18}, starts: []string{"stability-ai/sdxl:8beff"},
			check: `console.log(JSON.stringify({ readme: "run sdxl", url: String(output[0].url()) }));`},
		{name: "run with progress", blocks: []int{19}, starts: []string{"onProgress"},
			check: `console.log(JSON.stringify({ readme: "run with progress", url: String(output[0].url()) }));`},
		{name: "models.list", blocks: []int{24}, starts: []string{"replicate.models.list()"},
			check: `console.log(JSON.stringify({ readme: "models.list", names: response.results.map((m) => m.owner + "/" + m.name) }));`},
		{name: "hardware.list", blocks: []int{28}, starts: []string{"replicate.hardware.list()"},
			check: `console.log(JSON.stringify({ readme: "hardware.list", skus: response.map((h) => h.sku) }));`},
		{name: "predictions.list", blocks: []int{42}, starts: []string{"replicate.predictions.list()"},
			check: `console.log(JSON.stringify({ readme: "predictions.list", n: response.results.length }));`},
		{name: "files.list", blocks: []int{61}, starts: []string{"replicate.files.list()"},
			check: `console.log(JSON.stringify({ readme: "files.list", n: response.results.length }));`},
		{name: "paginate", blocks: []int{64}, starts: []string{"replicate.paginate(replicate.predictions.list)"},
			check: `console.log(JSON.stringify({ readme: "paginate", n: page1.value.length }));`},
		{name: "useFileOutput: false", blocks: []int{67}, starts: []string{"useFileOutput: false"},
			check: `console.log(JSON.stringify({ readme: "useFileOutput: false", off: replicate.useFileOutput === false }));`},
	}
	program := readmeProgram(t, blocks, map[string]string{`"my api token"`: `process.env.REPLICATE_API_TOKEN`},
		`const Replicate = require("replicate"); // README block 1, its CommonJS line`, steps, false)
	got := runReadme(t, program, false, "SIM_URL="+base, "REPLICATE_API_TOKEN="+testToken, "NODE_EXTRA_CA_CERTS="+ca)

	https := func(v any) bool { s, _ := v.(string); return strings.HasPrefix(s, "https://127.0.0.2:") }
	tests := []struct {
		step string
		ok   func(v map[string]any) bool
	}{
		{"run", func(v map[string]any) bool { return https(v["url"]) && v["size"].(float64) > 0 }},
		{"background", func(v map[string]any) bool {
			out, _ := v["output"].([]any)
			return v["status"] == statusSucceeded && len(out) == 1 && https(out[0])
		}},
		{"file input", func(v map[string]any) bool {
			img, _ := v["image"].(string)
			return https(v["url"]) && strings.HasPrefix(img, base+"/v1/files/")
		}},
		{"run sdxl", func(v map[string]any) bool { return https(v["url"]) }},
		{"run with progress", func(v map[string]any) bool { return https(v["url"]) }},
		{"models.list", func(v map[string]any) bool {
			names, _ := v["names"].([]any)
			return len(names) == 2+len(replicateReadmeModels)
		}},
		{"hardware.list", func(v map[string]any) bool { return len(v["skus"].([]any)) > 0 }},
		{"predictions.list", func(v map[string]any) bool { return v["n"].(float64) >= 5 }},
		{"files.list", func(v map[string]any) bool { return v["n"].(float64) == 1 }},
		{"paginate", func(v map[string]any) bool { return v["n"].(float64) >= 5 }},
		{"useFileOutput: false", func(v map[string]any) bool { return v["off"] == true }},
	}
	for _, tt := range tests {
		if v, ok := got[tt.step]; !ok || !tt.ok(v) {
			t.Errorf("README example %q: %v", tt.step, v)
		}
	}
}

// TestTheFalREADMEExamplesRunAgainstTheSimulator runs the examples of
// npm @fal-ai/client@1.10.1's README as written (as an ES module): its
// placeholders "FAL_KEY" (the key) and "my-function-id" (an app, which
// the client refuses as written: it wants owner/alias) are replaced by the
// key in FAL_KEY and an app the simulator has; fal's hosts resolve to the
// simulator.
func TestTheFalREADMEExamplesRunAgainstTheSimulator(t *testing.T) {
	const app = "sim/readme-function"
	_, base, ca := contractSimulator(t, readmeModel{name: app, inputs: map[string]string{"foo": "string"}})
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, filepath.Join(root, "tools", "node_modules", "@fal-ai", "client", "README.md"))
	if len(blocks) != 3 || !strings.Contains(blocks[0], `import { fal } from "@fal-ai/client";`) {
		t.Fatalf("the README's blocks changed: %q", blocks)
	}
	steps := []readmeStep{
		{name: "config", blocks: []int{0}, starts: []string{"fal.config("}, top: true},
		{name: "fal.run", blocks: []int{1}, starts: []string{"fal.run("},
			check: `console.log(JSON.stringify({ readme: "fal.run", result }));`},
		{name: "fal.subscribe", blocks: []int{2}, starts: []string{"fal.subscribe("},
			check: `console.log(JSON.stringify({ readme: "fal.subscribe", result }));`},
	}
	placeholders := map[string]string{`"FAL_KEY"`: "process.env.FAL_KEY", `"my-function-id"`: `"` + app + `"`}
	program := readmeProgram(t, blocks, placeholders, "", steps, true)
	got := runReadme(t, program, true, "SIM_URL="+base, "FAL_KEY="+testToken, "NODE_EXTRA_CA_CERTS="+ca)
	for _, step := range []string{"fal.run", "fal.subscribe"} {
		v := got[step]
		result, _ := v["result"].(map[string]any)
		data, _ := result["data"].(map[string]any)
		images, _ := data["images"].([]any)
		if len(images) != 1 || result["requestId"] == nil {
			t.Errorf("README example %s: %v, want the result's one image and its request id", step, v)
		}
	}
}
