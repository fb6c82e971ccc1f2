package playground_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// chromium is Debian's Chromium, which the browser tests drive (never a
// browser downloaded by Playwright).
const chromium = "/usr/bin/chromium"

// browserTools finds node, Chromium and playwright-core, or fails saying
// how to install them: under make test a browser test never skips.
func browserTools(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the browser tests need Debian's Chromium at %s: run `make test` (scripts/install-deps.sh installs it) or `apt-get install chromium`", chromium)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the browser tests run their scripts with node, which is not on PATH: `apt-get install nodejs npm` (Node 18 or newer), then `make test`")
	}
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(root, "tools", "node_modules", "playwright-core")
	if _, err := os.Stat(filepath.Join(pw, "package.json")); err != nil {
		t.Fatalf("playwright-core is not installed in %s: run `make test` (or `npm ci --prefix tools`)", pw)
	}
	return pw
}

// screenshotDir is test-output/<name>, emptied: no screenshot of an
// earlier run is left in it.
func screenshotDir(t *testing.T, name string) string {
	t.Helper()
	root, err := testsupport.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "test-output", name)
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// browserChecks are the JSON lines a browser script printed, by their
// "check" name, in order.
type browserChecks map[string][]map[string]any

// last is the last report of a check (nil when there was none).
func (c browserChecks) last(name string) map[string]any {
	if l := c[name]; len(l) > 0 {
		return l[len(l)-1]
	}
	return nil
}

// browserStepWait is how long a browser script waits for one step (a page,
// a job's answer shown) before it calls the step hung: a hang detector,
// not a speed target. A loaded machine (make test-under-load) takes
// minutes where a quiet one takes seconds.
const browserStepWait = 10 * time.Minute

// runBrowserScript runs testdata/<script> with node, its environment
// extended by env (PLAYWRIGHT_CORE, a fresh USER_DATA_DIR and WAIT_MS,
// browserStepWait, are added), logs what it printed and returns its
// checks; the error says how it failed, with what it wrote to stderr. The
// run is bounded by the test binary's deadline, so a hang is reported by
// this test rather than by go test's panic.
func runBrowserScript(t *testing.T, pw string, script string, env ...string) (browserChecks, error) {
	t.Helper()
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", script))
	cmd.Env = append(append(os.Environ(), "PLAYWRIGHT_CORE="+pw, "USER_DATA_DIR="+t.TempDir(),
		fmt.Sprintf("WAIT_MS=%d", browserStepWait.Milliseconds())), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	checks := browserChecks{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t.Logf("browser: %s", sc.Text())
		var c map[string]any
		if json.Unmarshal(sc.Bytes(), &c) == nil {
			name, _ := c["check"].(string)
			checks[name] = append(checks[name], c)
		}
	}
	if runErr != nil {
		return checks, fmt.Errorf("node testdata/%s: %w: %s", script, runErr, stderr.String())
	}
	return checks, nil
}
