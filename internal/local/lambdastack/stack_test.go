package lambdastack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// The suite runs on one stack (one moto, the bootstraps built once per
// test binary and kept in a cache between runs); a test that needs other
// policies makes a stack of its own from the same builds.
var (
	sharedOnce  sync.Once
	sharedStack *Local
	sharedErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedStack != nil {
		// The suite's own checks, last: which functions ran (all of them
		// on a whole run), and no denial anywhere (checkSuite).
		if !checkSuite(sharedStack.Stack, os.Stdout, wholeRun()) && code == 0 {
			code = 1
		}
		sharedStack.Close()
		if code == 0 {
			os.RemoveAll(sharedStack.cfg.Dir)
		} else {
			fmt.Printf("mediagen-dev lambdas: the stack's logs are kept in %s\n", sharedStack.cfg.Dir)
		}
	}
	if hooks != nil {
		hooks.srv.Close()
	}
	os.Exit(code)
}

// requireTools fails (never skips) with the fix when a tool is missing.
func requireTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("moto_server"); err != nil {
		t.Fatalf("%s (%v)", testsupport.MotoFix, err)
	}
	if err := exec.Command("python3", "-c", "import samtranslator").Run(); err != nil {
		t.Fatalf("aws-sam-translator is missing: pip install aws-sam-translator==1.110.0 (%v)", err)
	}
}

func testConfig(t *testing.T, name string) LocalConfig {
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "mediagen-lambdas-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	return LocalConfig{Config: Config{Root: root, Dir: dir, StackName: "mg-" + name}, SimulatorLatency: 100 * time.Millisecond}
}

func shared(t *testing.T) *Local {
	t.Helper()
	requireTools(t)
	sharedOnce.Do(func() {
		sharedStack, sharedErr = StartLocal(context.Background(), suiteConfig(t))
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedStack
}

// call sends a request to the stack's API with the dev account's key.
func call(t *testing.T, l *Local, method, path, body string) (int, map[string]any) {
	t.Helper()
	return callAs(t, l, l.Dev.APIKey, method, path, body)
}

// callAs sends a request with key ("" for none).
func callAs(t *testing.T, l *Local, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, l.BaseURL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

// An image generation runs to completion on the deployed shape: the
// gateway's authorizer and route invoke the generate function's built
// bootstrap, which holds the credits in DynamoDB and queues its poll on
// SQS (moto, with its role's permissions); the event source mapping
// invokes the poller, which polls the simulator, copies the output to the
// bucket and settles; the status route reads it completed, and the CDN's
// stand-in serves the output. No call of any function was denied.
func TestAnImageGenerationCompletesOnTheDeployedShape(t *testing.T) {
	l := shared(t)
	status, gen := call(t, l, http.MethodPost, "/api/generations/generate",
		`{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a lighthouse at dawn"},"image_count":1}`)
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("generate: %d %v", status, gen)
	}
	id, _ := gen["uuid"].(string)
	view := waitStatus(t, l, "/api/generations/status/"+id)
	if view["status"] != "completed" {
		t.Fatalf("the generation ended %v: %v\n%s", view["status"], view, l.logsOf("PollerFunction"))
	}
	outputs, _ := view["output"].([]any)
	if len(outputs) != 1 {
		t.Fatalf("outputs %v, want one", view["output"])
	}
	resp, err := l.Media.Client().Get(fmt.Sprint(outputs[0]))
	if err != nil {
		t.Fatal(err)
	}
	png, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(png) < 100 {
		t.Errorf("the output %v: HTTP %d, %d bytes", outputs[0], resp.StatusCode, len(png))
	}
	for _, fn := range []string{"AuthorizerFunction", "GenerateFunction", "PollerFunction", "StatusFunction"} {
		if l.Functions()[fn].Invocations() == 0 {
			t.Errorf("%s never ran", fn)
		}
	}
	if d := l.Moto.Denials(); len(d) > 0 {
		t.Errorf("moto denied %d calls: %+v", len(d), d)
	}
}

// waitStatus reads a status view until it is no longer processing, for
// at most a minute of real processes' work (the status route's polls are
// the only clock here: the functions run on wall time, as Lambda's do).
func waitStatus(t *testing.T, l *Local, path string) map[string]any {
	t.Helper()
	return waitStatusAs(t, l, l.Dev.APIKey, path, time.Minute)
}

// waitStatusAs is waitStatus with key, for at most limit, reading the view
// at most 150 times (the dev account's plan allows 100 requests a minute).
func waitStatusAs(t *testing.T, l *Local, key, path string, limit time.Duration) map[string]any {
	t.Helper()
	tick := time.NewTicker(max(250*time.Millisecond, limit/150))
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		status, view := callAs(t, l, key, http.MethodGet, path, "")
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, view)
		}
		if view["status"] != "processing" {
			return view
		}
		select {
		case <-tick.C:
		case <-deadline:
			return view
		}
	}
}

// logsOf is a function's log, for failure messages.
func (s *Stack) logsOf(logical string) string {
	raw, _ := os.ReadFile(filepath.Join(s.cfg.Dir, "logs", logical+".log"))
	if len(raw) > 8000 {
		raw = raw[len(raw)-8000:]
	}
	return string(raw)
}

// The roles are what is tested: with one action taken out of one
// function's expanded policy (the generate function's sqs:SendMessage*
// on the poll queue), that path fails, moto names the denial, and the
// function's own log says AccessDenied.
func TestARoleWithoutOneActionFailsThatPathWithAccessDenied(t *testing.T) {
	requireTools(t)
	cfg := testConfig(t, "denied")
	removed := false
	cfg.Edit = func(doc map[string]any) {
		role, _ := doc["Resources"].(map[string]any)["GenerateFunctionRole"].(map[string]any)
		props, _ := role["Properties"].(map[string]any)
		policies, _ := props["Policies"].([]any)
		for _, p := range policies {
			stmts, _ := p.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any)
			for _, st := range stmts {
				sm := st.(map[string]any)
				actions := actionList(sm["Action"])
				if i := slices.Index(actions, "sqs:SendMessage*"); i >= 0 {
					kept := []any{}
					for _, a := range slices.Delete(actions, i, i+1) {
						kept = append(kept, a)
					}
					if len(kept) == 0 {
						kept = append(kept, "sqs:GetQueueUrl")
					}
					sm["Action"] = kept
					removed = true
				}
			}
		}
	}
	defer os.RemoveAll(cfg.Dir)
	l, err := StartLocal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !removed {
		t.Fatal("the generate function's expanded policy has no sqs:SendMessage* to remove")
	}
	status, body := call(t, l, http.MethodPost, "/api/generations/generate",
		`{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a lighthouse at dawn"},"image_count":1}`)
	if status < 500 {
		t.Errorf("generate without its queue permission answered %d %v, want a 5xx", status, body)
	}
	denials := l.Moto.Denials()
	if len(denials) == 0 || denials[0].Caller != "GenerateFunction" || !strings.Contains(denials[0].Message, "sqs:SendMessage") {
		t.Errorf("moto's denials %+v, want the generate function's sqs:SendMessage", denials)
	}
	if log := l.logsOf("GenerateFunction"); !strings.Contains(log, "AccessDenied") {
		t.Errorf("the generate function's log does not name AccessDenied:\n%s", log)
	}
}
