package main

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// generate --input key=@FILE uploads the image (POST /api/files and a PUT
// to its presigned URL) and sends its file URL: the record echoes
// mediagen://files/<id>, the provider reads the very file's bytes through
// a presigned GET of the generation's copy, and the image completes.
func TestGenerateUploadsAnAtFileAndSendsItsFileURL(t *testing.T) {
	rt := clientEnv(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 32, 24))); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "harbour.png")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := mediagen(t, "generate", "--model", "provider-a", "--version", "zeta",
		"--input", "prompt=the harbour at night", "--input", "image_input=@"+file, "--wait", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `mediagen://files/`) || strings.Contains(stdout, "data:image") {
		t.Errorf("the record does not echo a file URL: %s", stdout)
	}
	jobs := rt.Simulator.Predictions("provider-a/zeta")
	if len(jobs) != 1 {
		t.Fatalf("the simulator has %d zeta jobs, want 1", len(jobs))
	}
	input := string(jobs[0].Input)
	start := strings.Index(input, "http")
	if start < 0 || !strings.Contains(input, "/"+media.InputsPrefix) || !strings.Contains(input, "/files/") {
		t.Fatalf("the provider's input names no copy of the uploaded file: %s", input)
	}
	given := strings.ReplaceAll(input[start:start+strings.Index(input[start:], `"`)], `\u0026`, "&")
	resp, err := http.Get(given)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("GET of the provider's URL: HTTP %d, %d bytes; want the %d bytes of %s", resp.StatusCode, len(got), buf.Len(), file)
	}
}
