package lambdastack

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// An upload on the deployed shape: the file-create function presigns the
// PUT with its own role (moto checks the role allows s3:PutObject on
// uploads/, and the PUT, made by plain net/http with no credentials, is
// authorized by that signature); the generate function, under its role,
// finds the file by listing uploads/, copies it to the generation's own
// key under inputs/ (moto checks the role allows s3:PutObject there),
// measures the copy, reads its first bytes and hands the provider a
// presigned GET of the copy that reads the very bytes uploaded; the image
// made from it completes. A file whose bytes are not its declared type is
// a 400 naming the field.
func TestAnUploadFeedsAnImageThroughTheBucket(t *testing.T) {
	l := shared(t)
	acct := newAccount(t, l, 100)
	img := image.NewNRGBA(image.Rect(0, 0, 24, 16))
	img.Set(3, 4, color.NRGBA{R: 200, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	file := func(ctype string, data []byte) string { return uploadFile(t, l, acct.APIKey, ctype, data) }
	request := func(ref string) string {
		b, _ := json.Marshal(map[string]any{"model": "provider-a", "model_version": "zeta",
			"input": map[string]any{"prompt": "the kite again, at dusk", "image_input": []any{ref}}})
		return string(b)
	}

	// A page's preflight for the upload's PUT is answered by the bucket's
	// CORS rule, which the stack gave the bucket from the template.
	f := mustCall(t, l, acct.APIKey, http.MethodPost, "/api/files", `{"content_type":"image/png","size":1000}`, http.StatusCreated)
	pre, _ := http.NewRequest(http.MethodOptions, f["upload_url"].(string), nil)
	pre.Header.Set("Origin", "https://playground.example")
	pre.Header.Set("Access-Control-Request-Method", "PUT")
	pre.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Errorf("a page's preflight for the upload: HTTP %d, Access-Control-Allow-Origin %q; want 200 and the rule's origin", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	fileURL := file("image/png", buf.Bytes())
	id, _ := generate(t, l, acct.APIKey, request(fileURL))
	var given string
	fileID, _ := domain.ParseFileURL(fileURL)
	for _, p := range l.Simulator.Predictions("provider-a/zeta") {
		if in := string(p.Input); strings.Contains(in, media.SnapshotKey(id, fileID)) {
			start := strings.Index(in, "http")
			given = strings.ReplaceAll(in[start:start+strings.Index(in[start:], `"`)], `\u0026`, "&")
		}
	}
	if given == "" {
		t.Fatal("the provider was handed no URL of the generation's copy of the uploaded file")
	}
	resp, err = http.Get(given)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("GET of the provider's URL: HTTP %d, %d bytes; want the %d bytes uploaded", resp.StatusCode, len(got), buf.Len())
	}
	view := waitStatusAs(t, l, acct.APIKey, "/api/generations/status/"+id, 2*time.Minute)
	if view["status"] != "completed" {
		t.Fatalf("the generation from the file ended %v", view)
	}

	fake := file("image/png", []byte("<html>not a picture</html>"))
	status, out := callAs(t, l, acct.APIKey, http.MethodPost, "/api/generations/generate", request(fake))
	if status != http.StatusBadRequest || !strings.Contains(toJSON(out), "input.image_input[0]") {
		t.Errorf("a file that is no image: HTTP %d %v, want 400 naming input.image_input[0]", status, out)
	}
}

// uploadFile makes a file of ctype (POST /api/files) and PUTs data to its
// upload URL as a page does (with an Origin, answered by the bucket's CORS
// rule); it answers the file's url.
func uploadFile(t *testing.T, l *Local, key, ctype string, data []byte) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"content_type": ctype, "size": len(data)})
	f := mustCall(t, l, key, http.MethodPost, "/api/files", string(body), http.StatusCreated)
	req, err := http.NewRequest(http.MethodPut, f["upload_url"].(string), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Origin", "https://playground.example") // as a page sends it
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Header.Values("Access-Control-Allow-Origin")) != 1 {
		t.Fatalf("PUT to the upload URL: HTTP %d, Access-Control-Allow-Origin %q, %s; want 200 and the rule's one origin", resp.StatusCode, resp.Header.Values("Access-Control-Allow-Origin"), answer)
	}
	return f["url"].(string)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
