package simulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"testing"
)

// upload posts a file to /v1/files as the replicate client does: the file
// in the part "content", the metadata as a JSON part.
func (h *harness) upload(name, contentType string, content []byte, metadata string) (File, int) {
	h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="content"; filename=%q`, name))
	hdr.Set("Content-Type", contentType)
	pw, err := mw.CreatePart(hdr)
	if err != nil {
		h.t.Fatal(err)
	}
	pw.Write(content)
	if metadata != "" {
		hdr = textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", `form-data; name="metadata"; filename="blob"`)
		hdr.Set("Content-Type", "application/json")
		pw, _ = mw.CreatePart(hdr)
		io.WriteString(pw, metadata)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", h.srv.URL+"/v1/files", &body)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var f File
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		h.t.Fatalf("POST /v1/files: %v", err)
	}
	return f, resp.StatusCode
}

func TestFilesAPIKeepsAnUploadAndAnswersItsURL(t *testing.T) {
	h := start(t, Config{})
	content := []byte("\x89PNG\r\n\x1a\n not really a picture")
	f, code := h.upload("cat.png", "image/png", content, `{"customer_reference_id":123}`)
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/files: HTTP %d, want 201", code)
	}
	sum := sha256.Sum256(content)
	if f.ID == "" || f.Name != "cat.png" || f.ContentType != "image/png" || f.Size != int64(len(content)) ||
		f.Checksums["sha256"] != hex.EncodeToString(sum[:]) || string(f.Metadata) != `{"customer_reference_id":123}` {
		t.Errorf("file = %+v", f)
	}
	if want := h.srv.URL + "/v1/files/" + f.ID; f.URLs["get"] != want {
		t.Errorf("urls.get = %q, want %q", f.URLs["get"], want)
	}
	var got File
	if code := h.call("GET", "/v1/files/"+f.ID, nil, &got); code != http.StatusOK || !equalJSON(t, got, f) {
		t.Errorf("GET /v1/files/%s: HTTP %d %+v, want 200 %+v", f.ID, code, got, f)
	}
	if code := h.call("GET", "/v1/files/nosuchfile", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET of an unknown file: HTTP %d, want 404", code)
	}
	if _, code := h.upload("x", "", nil, "not json"); code != http.StatusBadRequest {
		t.Errorf("metadata that is not JSON: HTTP %d, want 400", code)
	}
}

func TestModelsAreListedAPageAtATime(t *testing.T) {
	models := map[string]string{}
	for i := range modelsPageSize + 7 {
		models[fmt.Sprintf("sim/m%02d", i)] = kindImage
	}
	h := start(t, Config{Models: models})
	var seen []string
	path := "/v1/models"
	for pages := 0; path != ""; pages++ {
		if pages > 5 {
			t.Fatal("the pages never end")
		}
		var page struct {
			Next    *string          `json:"next"`
			Results []map[string]any `json:"results"`
		}
		if code := h.call("GET", path, nil, &page); code != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", path, code)
		}
		if len(page.Results) > modelsPageSize {
			t.Errorf("a page of %d models, want at most %d", len(page.Results), modelsPageSize)
		}
		for _, m := range page.Results {
			seen = append(seen, m["owner"].(string)+"/"+m["name"].(string))
		}
		path = ""
		if page.Next != nil {
			path = (*page.Next)[len(h.srv.URL):]
		}
	}
	slices.Sort(seen)
	want := make([]string, 0, len(models))
	for m := range models {
		want = append(want, m)
	}
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("listed %v, want every model once: %v", seen, want)
	}
}

func TestOutputSchemaSaysWhatTheModelReturns(t *testing.T) {
	h := start(t, Config{})
	tests := []struct {
		model, want string
		input       map[string]any
	}{
		{imageModel, "array", map[string]any{"prompt": "schema"}},
		{videoModel, "string", map[string]any{"prompt": "schema", "duration": 1, "resolution": "144p"}},
	}
	for _, tt := range tests {
		var m struct {
			LatestVersion struct {
				Schema struct {
					Components struct {
						Schemas struct {
							Output struct {
								Type string `json:"type"`
							} `json:"Output"`
						} `json:"schemas"`
					} `json:"components"`
				} `json:"openapi_schema"`
			} `json:"latest_version"`
		}
		h.call("GET", "/v1/models/"+tt.model, nil, &m)
		if got := m.LatestVersion.Schema.Components.Schemas.Output.Type; got != tt.want {
			t.Errorf("%s: Output type %q, want %q", tt.model, got, tt.want)
		}
		p := h.waitFinal(h.create(tt.model, tt.input, "").ID)
		_, isList := p.Output.([]any)
		if isList != (tt.want == "array") {
			t.Errorf("%s: output %#v does not match its schema's %s", tt.model, p.Output, tt.want)
		}
	}
}

func TestOutputEventsComeWhileTheOutputGrows(t *testing.T) {
	hooks := webhookReceiver(t)
	h := start(t, Config{})
	var p Prediction
	body := map[string]any{"input": map[string]any{"prompt": "two", "num_outputs": 2}, "webhook": hooks.URL,
		"webhook_events_filter": []string{eventOutput, eventCompleted}}
	if code := h.call("POST", "/v1/models/"+imageModel+"/predictions", body, &p); code != http.StatusCreated {
		t.Fatalf("create: HTTP %d", code)
	}
	var outputs []int
	for {
		w := hooks.next(t)
		if w.Status == statusSucceeded {
			break
		}
		if w.Status != statusProcessing {
			t.Fatalf("an output event with status %s, want processing", w.Status)
		}
		list, _ := w.Output.([]any)
		outputs = append(outputs, len(list))
	}
	if !slices.Equal(outputs, []int{1, 2}) {
		t.Errorf("output events carried %v outputs, want one event per image as it is rendered: [1 2]", outputs)
	}
}
