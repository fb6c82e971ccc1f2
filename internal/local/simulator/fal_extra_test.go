package simulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// falCall sends a request with fal's Key authorization and answers the
// response (the caller closes its body).
func (h *harness) falCall(method, url, contentType string, body io.Reader) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Key "+testToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func decodeBody(t *testing.T, resp *http.Response, out any) {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: answer %q: %v", resp.Request.URL, raw, err)
	}
}

// fal.run answers the result itself, once the request has run: the images,
// not the queue's envelope.
func TestFalRunAnswersTheResultItself(t *testing.T) {
	h := start(t, Config{})
	resp := h.falCall("POST", h.srv.URL+falRunPrefix+"/"+imageModel, "application/json", strings.NewReader(`{"prompt":"a synchronous cat"}`))
	var result map[string]any
	decodeBody(t, resp, &result)
	images, _ := result["images"].([]any)
	if resp.StatusCode != http.StatusOK || len(images) != 1 || result["request_id"] != nil || result["status"] != nil {
		t.Fatalf("fal.run: HTTP %d %v, want 200 and the result's images", resp.StatusCode, result)
	}
	if resp.Header.Get("X-Fal-Request-Id") == "" {
		t.Error("fal.run answered no X-Fal-Request-Id")
	}
	url, _ := images[0].(map[string]any)["url"].(string)
	if _, ct, body := h.download(url); ct != "image/png" || len(body) == 0 {
		t.Errorf("the image at %s: %q, %d bytes", url, ct, len(body))
	}
	fail := h.falCall("POST", h.srv.URL+falRunPrefix+"/"+imageModel, "application/json", strings.NewReader(`{"prompt":"no `+MarkerFail+`"}`))
	fail.Body.Close()
	if fail.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("fal.run of a failing request: HTTP %d, want 422", fail.StatusCode)
	}
}

// The queue's status stream sends each change of status as an event, and
// ends after COMPLETED.
func TestFalStatusStreamSendsEachStatusUntilCompleted(t *testing.T) {
	h := start(t, Config{})
	resp := h.falCall("POST", h.srv.URL+"/fal/"+imageModel, "application/json", strings.NewReader(`{"prompt":"a streamed cat"}`))
	var sub struct {
		StatusURL string `json:"status_url"`
	}
	decodeBody(t, resp, &sub)
	stream := h.falCall("GET", sub.StatusURL+"/stream?logs=0", "", nil)
	defer stream.Body.Close()
	if ct := stream.Header.Get("Content-Type"); stream.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("status stream: HTTP %d %q, want 200 text/event-stream", stream.StatusCode, ct)
	}
	var statuses []string
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var st struct{ Status string }
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			t.Fatalf("event data %q: %v", data, err)
		}
		statuses = append(statuses, st.Status)
	}
	if len(statuses) == 0 || statuses[len(statuses)-1] != "COMPLETED" {
		t.Fatalf("statuses %v: want the stream to end after COMPLETED", statuses)
	}
	for i := 1; i < len(statuses); i++ {
		if statuses[i] == statuses[i-1] && statuses[i] != "IN_QUEUE" { // the queue position may change
			t.Errorf("statuses %v: %s repeated", statuses, statuses[i])
		}
	}
}

// fal's storage: initiate answers an upload URL and the file's URL; the
// PUT to the first (which needs no key, only its own token) makes the
// bytes downloadable at the second.
func TestFalStorageUploadServesTheFileAtItsURL(t *testing.T) {
	h := start(t, Config{})
	resp := h.falCall("POST", h.srv.URL+falRestPrefix+"/storage/upload/initiate?storage_type=fal-cdn-v3", "application/json",
		strings.NewReader(`{"content_type":"image/png","file_name":"cat.png"}`))
	var up struct {
		UploadURL string `json:"upload_url"`
		FileURL   string `json:"file_url"`
	}
	decodeBody(t, resp, &up)
	if resp.StatusCode != http.StatusOK || up.UploadURL == "" || !strings.HasSuffix(up.FileURL, "/cat.png") {
		t.Fatalf("initiate: HTTP %d %+v", resp.StatusCode, up)
	}
	content := []byte("\x89PNG not quite")
	forged := strings.Replace(up.UploadURL, "token=", "token=x", 1)
	for _, tt := range []struct {
		url  string
		want int
	}{{forged, http.StatusForbidden}, {up.UploadURL, http.StatusOK}} {
		req, _ := http.NewRequest("PUT", tt.url, bytes.NewReader(content))
		req.Header.Set("Content-Type", "image/png")
		put, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		put.Body.Close()
		if put.StatusCode != tt.want {
			t.Errorf("PUT %s: HTTP %d, want %d", tt.url, put.StatusCode, tt.want)
		}
	}
	if _, ct, body := h.download(up.FileURL); ct != "image/png" || !bytes.Equal(body, content) {
		t.Errorf("GET %s: %q %q, want the uploaded bytes", up.FileURL, ct, body)
	}
}
