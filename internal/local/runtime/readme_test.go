package runtime_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestREADMEQuickstartGivesAVideoURL runs the quickstart's curl commands word
// for word (with the printed base URL and key in the environment, as the
// quickstart says), so the README cannot drift from what the service does.
func TestREADMEQuickstartGivesAVideoURL(t *testing.T) {
	raw, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, quick, ok := strings.Cut(string(raw), "\n## Quickstart\n")
	if !ok {
		t.Fatal(`the README has no "## Quickstart" section`)
	}
	quick, _, _ = strings.Cut(quick, "\n## ")
	var commands []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(quick, -1) {
		if strings.Contains(block[1], "curl") {
			commands = append(commands, strings.TrimSpace(block[1]))
		}
	}
	if len(commands) < 2 || !strings.Contains(commands[0], "beta-2") || !strings.Contains(commands[1], "/api/generations/status/") {
		t.Fatalf("the quickstart no longer has the generate and status curl commands: %q", commands)
	}
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 1000)
	env := append(os.Environ(), "MEDIAGEN_BASE_URL="+rt.BaseURL, "MEDIAGEN_API_KEY="+owner.APIKey)
	sh := func(cmd string) []byte {
		t.Helper()
		c := exec.Command("sh", "-c", cmd)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out
	}
	var created struct {
		UUID   string `json:"uuid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(sh(commands[0]), &created); err != nil || created.Status != "processing" {
		t.Fatalf("the quickstart's generate command answered %+v, %v", created, err)
	}
	// The status command carries the README's example uuid: use ours.
	status := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).ReplaceAllString(commands[1], created.UUID)
	var view struct {
		Status string   `json:"status"`
		Output []string `json:"output"`
	}
	waitfor.Condition(t, time.Minute, "the quickstart's generation to end", func() bool {
		if err := json.Unmarshal(sh(status), &view); err != nil {
			t.Fatal(err)
		}
		return view.Status != "processing"
	})
	if view.Status != "completed" || len(view.Output) != 1 || !strings.HasSuffix(view.Output[0], ".mp4") {
		t.Fatalf("the quickstart's status command answered %+v", view)
	}
	// The synchronous image: one request, answered completed with its
	// image.
	var waited struct {
		Status     string `json:"status"`
		OutputData struct {
			URLs []string `json:"urls"`
		} `json:"output_data"`
	}
	var synced bool
	for _, cmd := range commands {
		if !strings.Contains(cmd, "Prefer: wait") {
			continue
		}
		synced = true
		if err := json.Unmarshal(sh(cmd), &waited); err != nil || waited.Status != "completed" ||
			len(waited.OutputData.URLs) != 1 || !strings.HasSuffix(waited.OutputData.URLs[0], ".png") {
			t.Errorf("the quickstart's Prefer: wait command answered %+v, %v; want the completed record with its image", waited, err)
		}
	}
	if !synced {
		t.Error("the quickstart shows no synchronous image (a curl with Prefer: wait)")
	}
	path := t.TempDir() + "/boat.mp4"
	sh("curl -s -o " + path + " '" + view.Output[0] + "'")
	info, err := ffmpeg.Runner{}.Probe(t.Context(), path)
	if v, ok := info.Video(); err != nil || !ok || v.Width != 1280 || info.Duration < 3.5 {
		t.Errorf("the downloaded video: %+v, %v", info, err)
	}
}

// TestREADMEUploadExampleFeedsAnImage runs the quickstart's upload example
// word for word, in a directory holding a PNG as photo.png: the file is
// made, its bytes PUT to the presigned URL, and the image made from it
// answers completed, its input echoing the file's URL.
func TestREADMEUploadExampleFeedsAnImage(t *testing.T) {
	raw, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, quick, _ := strings.Cut(string(raw), "\n## Quickstart\n")
	quick, _, _ = strings.Cut(quick, "\n## ")
	var script string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(quick, -1) {
		if strings.Contains(block[1], "/api/files") {
			script = block[1]
		}
	}
	if script == "" {
		t.Fatal("the quickstart shows no upload (a sh block using /api/files)")
	}
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 1000)
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/photo.png", noisePNG(t, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("sh", "-c", script)
	c.Dir, c.Env = dir, append(os.Environ(), "MEDIAGEN_BASE_URL="+rt.BaseURL, "MEDIAGEN_API_KEY="+owner.APIKey)
	out, err := c.Output()
	if err != nil {
		t.Fatalf("the upload example: %v\n%s", err, out)
	}
	var rec struct {
		Status string `json:"status"`
		Input  struct {
			Images []string `json:"image_input"`
		} `json:"input_parameters"`
		OutputData struct {
			URLs []string `json:"urls"`
		} `json:"output_data"`
	}
	// The PUT answers nothing; the generate's record is the last line.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil || rec.Status != "completed" || len(rec.OutputData.URLs) != 1 ||
		len(rec.Input.Images) != 1 || !strings.HasPrefix(rec.Input.Images[0], "mediagen://files/") {
		t.Fatalf("the upload example answered %s (%v); want the completed image made from the file", out, err)
	}
}
