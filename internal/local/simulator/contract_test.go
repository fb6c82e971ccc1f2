package simulator

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	signing "github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// contractSimulator serves a simulator as the local runtime does: the API
// on one address, the files on another host (127.0.0.2) over https with a
// CA of its own, whose file a client trusts (NODE_EXTRA_CA_CERTS). extra
// adds models (with their inputs and pinned versions).
func contractSimulator(t *testing.T, extra ...readmeModel) (*Simulator, string, string) {
	t.Helper()
	api := httptest.NewUnstartedServer(nil)
	filesLn, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("the files host 127.0.0.2 cannot be listened on: %v", err)
	}
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := ca.ServerTLS("127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	files := &httptest.Server{Listener: filesLn, Config: &http.Server{}, TLS: tlsCfg}
	cfg := Config{
		Token: testToken, BaseURL: "http://" + api.Listener.Addr().String(), FilesBaseURL: "https://" + filesLn.Addr().String(),
		Models: map[string]string{videoModel: kindVideo, imageModel: kindImage},
		Inputs: map[string]map[string]string{
			videoModel: {"prompt": "string", "duration": "integer", "resolution": "string"},
			imageModel: {"prompt": "string", "num_outputs": "integer"},
		},
		Versions: map[string]string{},
		WorkDir:  t.TempDir(), FFmpeg: ffmpeg.Runner{Timeout: time.Minute}, WebhookSecret: signing.NewSecret(),
	}
	for _, m := range extra {
		cfg.Models[m.name], cfg.Inputs[m.name] = kindImage, m.inputs
		if m.version != "" {
			cfg.Versions[m.name] = m.version
		}
	}
	sim, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	api.Config.Handler, files.Config.Handler = sim, sim
	api.Start()
	files.StartTLS()
	t.Cleanup(func() {
		sim.Close()
		api.Close()
		files.Close()
	})
	return sim, api.URL, ca.File
}

// readmeModel is a model a README example names.
type readmeModel struct {
	name, version string
	inputs        map[string]string
}

// runContract runs one of testdata/*.cjs with the official client it
// names, installed in tools/node_modules, and reports its checks; at least
// min of them.
func runContract(t *testing.T, script, pkg string, min int, env ...string) {
	t.Helper()
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(root, "tools")
	if _, err := os.Stat(filepath.Join(tools, "node_modules", pkg, "package.json")); err != nil {
		t.Fatalf("the official client %s is not installed in tools/node_modules: run `make test` (or `npm ci --prefix tools`)", pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", script))
	cmd.Env = append(os.Environ(), append(env, "TOOLS="+tools)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("%s with %s failed (%v):\n%s", script, pkg, err, stderr.String())
	}
	if n := strings.Count(stdout.String(), `"ok":true`); n < min {
		t.Errorf("%s ran %d checks, want at least %d", script, n, min)
	}
}

// TestTheOfficialReplicateClientWorksAgainstTheSimulator holds the
// simulator's Replicate face to npm replicate@1.4.0: models and their
// schemas, create by model and by version (bare id, Prefer: wait), wait,
// get, list, cancel, a 422 on a wrong type, and webhooks that follow the
// events filter and verify with the default webhook secret.
func TestTheOfficialReplicateClientWorksAgainstTheSimulator(t *testing.T) {
	_, base, ca := contractSimulator(t)
	runContract(t, "replicate-contract.cjs", "replicate", 16, "SIM_URL="+base, "NODE_EXTRA_CA_CERTS="+ca, "SIM_TOKEN="+testToken,
		"VIDEO_MODEL="+videoModel, "IMAGE_MODEL="+imageModel,
		`VIDEO_INPUT={"duration":1,"resolution":"144p"}`, `BAD_INPUT={"duration":"1"}`)
}

// TestTheOfficialFalClientWorksAgainstTheSimulator holds the simulator's
// fal face to npm @fal-ai/client@1.10.1: subscribe, submit (an app id with
// a sub-path), status with queue_position, result, cancel, a 422 on a
// wrong type, and a webhook signed with a key of the JWKS.
func TestTheOfficialFalClientWorksAgainstTheSimulator(t *testing.T) {
	_, base, ca := contractSimulator(t)
	runContract(t, "fal-contract.cjs", filepath.Join("@fal-ai", "client"), 14, "SIM_URL="+base, "NODE_EXTRA_CA_CERTS="+ca, "SIM_TOKEN="+testToken,
		"VIDEO_APP="+videoModel, "IMAGE_APP="+imageModel,
		`VIDEO_INPUT={"duration":1,"resolution":"144p"}`, `BAD_INPUT={"duration":"1"}`)
}

// TestTheStainlessReplicateClientWorksAgainstTheSimulator holds the
// Replicate face to npm replicate-stainless@0.9.0, the client generated
// from Replicate's OpenAPI document: models, versions, create by model with
// Prefer: wait and by bare version, get, list, cancel, a 422 and the
// webhook secret.
func TestTheStainlessReplicateClientWorksAgainstTheSimulator(t *testing.T) {
	_, base, ca := contractSimulator(t)
	runContract(t, "replicate-stainless-contract.cjs", "replicate-stainless", 8, "SIM_URL="+base, "NODE_EXTRA_CA_CERTS="+ca, "SIM_TOKEN="+testToken,
		"VIDEO_MODEL="+videoModel, "IMAGE_MODEL="+imageModel, `BAD_INPUT={"duration":"1"}`)
}
