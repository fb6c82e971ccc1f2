package catalog

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// pngDataURI is a real 1×1 PNG as a data URI.
var pngDataURI = func() string {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}()

// fileURL names a file as POST /api/files makes them.
var fileURL = domain.FileURL(domain.NewFileID(time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)))

// body builds a generate request body from Go values.
func body(t *testing.T, model, version string, input map[string]any, extra ...any) []byte {
	t.Helper()
	m := map[string]any{"model": model, "model_version": version, "input": input}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// specSamples are a request of every variant using each of its spec fields.
var specSamples = func() []struct {
	model, version string
	input          map[string]any
	imageCount     any
	wantCount      int
	wantResolved   map[string]any // a few keys worth checking
} {
	url := "https://cdn.example.com/ref.png"
	return []struct {
		model, version string
		input          map[string]any
		imageCount     any
		wantCount      int
		wantResolved   map[string]any // a few keys worth checking
	}{
		{"provider-a", "alpha-3.1-fast", map[string]any{"prompt": "a fox", "auto_fix": true, "duration": "6", "resolution": "1080p",
			"aspect_ratio": "9:16", "generate_audio": true, "negative_prompt": "rain"}, 1, 1, map[string]any{"duration": "6", "generate_audio": true}},
		{"provider-b", "beta-2-enchanted", map[string]any{"prompt": "a fox", "duration": "15", "n_frames": "15",
			"image_urls": []any{url, pngDataURI}, "aspect_ratio": "portrait", "remove_watermark": true}, nil, 1, map[string]any{"duration": "15"}},
		{"provider-b", "beta-2", map[string]any{"prompt": "a fox", "seconds": "12", "aspect_ratio": "landscape", "input_reference": url}, 1, 1,
			map[string]any{"seconds": "12"}},
		{"provider-c", "gamma-v2.1", map[string]any{"mode": "pro", "prompt": "a fox", "duration": "10", "start_image": pngDataURI}, 1, 1,
			map[string]any{"mode": "pro"}},
		{"provider-d", "video-01", map[string]any{"prompt": "a fox", "first_frame_image": url, "subject_reference": url}, 1, 1, nil},
		{"provider-e", "delta-1-pro", map[string]any{"fps": "24", "image": url, "prompt": "a fox", "duration": "10", "resolution": "480p",
			"aspect_ratio": "21:9", "camera_fixed": false}, 1, 1, map[string]any{"resolution": "480p"}},
		{"provider-d", "epsilon-02", map[string]any{"prompt": "a fox", "duration": "10", "resolution": "1080p", "first_frame_image": url}, 1, 1,
			map[string]any{"duration": "10"}},
		{"provider-a", "zeta-pro", map[string]any{"prompt": "a fox", "num_images": "3", "resolution": "4K", "aspect_ratio": "2:3",
			"output_format": "webp", "enable_web_search": true}, 3, 3, map[string]any{"num_images": "3", "resolution": "4K"}},
		{"provider-a", "zeta", map[string]any{"prompt": "a fox", "image_input": []any{url}}, 2, 2, nil},
		{"provider-f", "eta-context-max", map[string]any{"prompt": "a fox", "input_image": url, "aspect_ratio": "16:9"}, 4, 4, nil},
		{"provider-a", "theta-4-fast", map[string]any{"prompt": "a fox", "aspect_ratio": "3:4"}, 1, 1, nil},
		{"provider-g", "iota-v3-turbo", map[string]any{"prompt": "a fox", "aspect_ratio": "1:3"}, nil, 1, map[string]any{"aspect_ratio": "1:3"}},
	}
}()

func TestEveryVariantAcceptsItsSpecFields(t *testing.T) {
	for _, tt := range specSamples {
		t.Run(tt.version, func(t *testing.T) {
			var extra []any
			if tt.imageCount != nil {
				extra = []any{"image_count", tt.imageCount}
			}
			req, err := ParseGenerate(body(t, tt.model, tt.version, tt.input, extra...), Options{})
			if err != nil {
				t.Fatalf("ParseGenerate: %v", err)
			}
			if req.Variant.Version != tt.version || req.ImageCount != tt.wantCount {
				t.Fatalf("variant %s count %d, want %s count %d", req.Variant.Version, req.ImageCount, tt.version, tt.wantCount)
			}
			if !equalJSON(req.Input, tt.input) {
				t.Errorf("Input = %v, want what was sent %v", req.Input, tt.input)
			}
			for k, w := range tt.wantResolved {
				if req.Resolved[k] != w {
					t.Errorf("Resolved[%s] = %v, want %v", k, req.Resolved[k], w)
				}
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestParseGenerateFillsDefaults(t *testing.T) {
	req, err := ParseGenerate([]byte(`{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"a fox"},"image_count":1}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"prompt": "a fox", "duration": "8", "resolution": "720p", "aspect_ratio": "16:9", "generate_audio": false}
	if !maps.Equal(req.Resolved, want) {
		t.Errorf("Resolved = %v, want %v", req.Resolved, want)
	}
	if !maps.Equal(req.Input, map[string]any{"prompt": "a fox"}) {
		t.Errorf("Input = %v, want only what was sent", req.Input)
	}
	if got := req.Variant.DurationSeconds(req.Resolved); got != 8 {
		t.Errorf("DurationSeconds = %d, want 8", got)
	}
}

func TestNumericEnumIsNormalisedToItsString(t *testing.T) {
	req, err := ParseGenerate([]byte(`{"model":"provider-b","model_version":"beta-2","input":{"prompt":"p","seconds":4,"aspect_ratio":"portrait"}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if req.Input["seconds"] != "4" || req.Resolved["seconds"] != "4" {
		t.Fatalf("seconds = %#v / %#v, want \"4\"", req.Input["seconds"], req.Resolved["seconds"])
	}
	echo, _ := json.Marshal(req.Input)
	if !strings.Contains(string(echo), `"seconds":"4"`) {
		t.Fatalf("echoed input %s does not carry the string", echo)
	}
}

// problem is one expected FieldError: the field and a part of its message.
type problem struct{ field, contains string }

// wantProblems checks that err is a *ValidationError listing exactly the
// expected fields (in sorted order) with messages containing the parts.
func wantProblems(t *testing.T, err error, want ...problem) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want *ValidationError", err)
	}
	if !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("error does not match domain.ErrInvalid")
	}
	if len(ve.Details) != len(want) {
		t.Fatalf("details = %+v, want %d: %+v", ve.Details, len(want), want)
	}
	for i, w := range want {
		d := ve.Details[i]
		if d.Field != w.field || !strings.Contains(d.Message, w.contains) {
			t.Errorf("detail %d = %s: %s, want %s: …%s…", i, d.Field, d.Message, w.field, w.contains)
		}
	}
}

func TestParseGenerateRejects(t *testing.T) {
	alpha := func(input string) string {
		return `{"model":"provider-a","model_version":"alpha-3.1-fast","input":` + input + `}`
	}
	zetaPro := func(input string, rest string) string {
		return `{"model":"provider-a","model_version":"zeta-pro","input":` + input + rest + `}`
	}
	gamma := func(image string) string {
		return `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"p","start_image":` + image + `}}`
	}
	zeta := func(list string) string {
		return `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p","image_input":` + list + `}}`
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tests := []struct {
		name string
		body string
		want []problem
	}{
		// Required fields and types.
		{"missing prompt", alpha(`{"duration":"4"}`), []problem{{"input.prompt", "is required"}}},
		{"whitespace-only prompt", alpha(`{"prompt":" \n\t "}`), []problem{{"input.prompt", "must not be empty"}}},
		{"empty prompt", alpha(`{"prompt":""}`), []problem{{"input.prompt", "must not be empty"}}},
		{"missing required enum", `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"p","aspect_ratio":"portrait"}}`,
			[]problem{{"input.seconds", "is required"}}},
		{"missing required image", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"p"}}`,
			[]problem{{"input.start_image", "is required"}}},
		{"prompt not a string", alpha(`{"prompt":42}`), []problem{{"input.prompt", "must be a string, got a number"}}},
		{"boolean as string", alpha(`{"prompt":"p","generate_audio":"true"}`), []problem{{"input.generate_audio", "must be true or false, got a string"}}},
		{"null value", alpha(`{"prompt":"p","negative_prompt":null}`), []problem{{"input.negative_prompt", "got null"}}},
		{"input not an object", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":"prompt"}`, []problem{{"input", "must be an object, got a string"}}},
		{"input missing", `{"model":"provider-a","model_version":"alpha-3.1-fast"}`, []problem{{"input", "is required"}}},
		// Enums.
		{"bad enum", alpha(`{"prompt":"p","duration":"5"}`), []problem{{"input.duration", `must be one of "4", "6", "8"`}}},
		{"enum as float", alpha(`{"prompt":"p","duration":4.0}`), []problem{{"input.duration", `must be one of "4", "6", "8"`}}},
		{"enum as float string", alpha(`{"prompt":"p","duration":"4.0"}`), []problem{{"input.duration", `must be one of`}}},
		{"enum as boolean", alpha(`{"prompt":"p","resolution":true}`), []problem{{"input.resolution", `must be one of "720p", "1080p"`}}},
		{"enum case matters", alpha(`{"prompt":"p","resolution":"1080P"}`), []problem{{"input.resolution", `must be one of`}}},
		{"duration and n_frames disagree", `{"model":"provider-b","model_version":"beta-2-enchanted","input":{"prompt":"p","duration":"10","n_frames":15}}`,
			[]problem{{"input.n_frames", `is "15" but input.duration is "10"`}}},
		// Prompt limits, in characters.
		{"alpha prompt one past the limit", alpha(`{"prompt":` + q(strings.Repeat("é", alphaPromptMaxLen+1)) + `}`),
			[]problem{{"input.prompt", "must be at most 20000 characters long, got 20001"}}},
		{"zeta-pro prompt of 2 characters", zetaPro(`{"prompt":"ab"}`, ""), []problem{{"input.prompt", "must be 3 to 50000 characters long, got 2"}}},
		{"zeta-pro prompt one past the limit", zetaPro(`{"prompt":`+q(strings.Repeat("x", ZetaProPromptMaxLen+1))+`}`, ""),
			[]problem{{"input.prompt", "must be 3 to 50000 characters long, got 50001"}}},
		// deadline_seconds: a whole number of seconds, 1 to a day.
		{"deadline of 0", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"},"deadline_seconds":0}`,
			[]problem{{"deadline_seconds", "must be a whole number of seconds from 1 to 86400, got 0"}}},
		{"deadline past a day", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"},"deadline_seconds":86401}`,
			[]problem{{"deadline_seconds", "must be a whole number of seconds from 1 to 86400, got 86401"}}},
		{"deadline with a fraction", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"},"deadline_seconds":1.5}`,
			[]problem{{"deadline_seconds", "got 1.5"}}},
		{"deadline as a string", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"},"deadline_seconds":"60"}`,
			[]problem{{"deadline_seconds", "got a string"}}},
		// Unknown fields and variants.
		{"unknown input field", alpha(`{"prompt":"p","foo":1}`),
			[]problem{{"input.foo", `unknown field "foo" (allowed: prompt, auto_fix, duration, resolution, aspect_ratio, generate_audio, negative_prompt)`}}},
		{"unknown top-level field", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"},"webhook":"x"}`,
			[]problem{{"webhook", `unknown field "webhook" (allowed: model, model_version, input, image_count, webhook_url, webhook_events, deadline_seconds)`}}},
		{"unknown model", `{"model":"provider-z","model_version":"zeta","input":{"prompt":"p"}}`,
			[]problem{{"model", `unknown model "provider-z" (allowed: provider-a, provider-b, provider-c, provider-d, provider-e, provider-f, provider-g)`}}},
		{"unknown model with a known version", `{"model":"provider-q","model_version":"beta-2","input":{"prompt":"p"}}`,
			[]problem{{"model", `unknown model "provider-q" (allowed: provider-a, provider-b, provider-c, provider-d, provider-e, provider-f, provider-g); model_version "beta-2" belongs to "provider-b"`}}},
		{"unknown model and version", `{"model":"provider-q","model_version":"omega","input":{"prompt":"p"}}`,
			[]problem{{"model", `unknown model "provider-q"`}, {"model_version", `unknown version "omega"`}}},
		{"version under the wrong model", `{"model":"provider-a","model_version":"beta-2","input":{"prompt":"p"}}`,
			[]problem{{"model_version", `"beta-2" belongs to model "provider-b", not "provider-a"`}}},
		{"unknown version", `{"model":"provider-b","model_version":"beta-3","input":{"prompt":"p"}}`,
			[]problem{{"model_version", `unknown version "beta-3" of model "provider-b" (allowed: beta-2-enchanted, beta-2)`}}},
		{"missing model and version", `{"input":{"prompt":"p"}}`, []problem{{"model", "is required"}, {"model_version", "is required"}}},
		{"model not a string", `{"model":1,"model_version":"zeta","input":{}}`, []problem{{"model", "must be a string, got a number"}}},
		// image_count.
		{"image_count 0", zetaPro(`{"prompt":"ppp"}`, `,"image_count":0`), []problem{{"image_count", "must be an integer from 1 to 4, got 0"}}},
		{"image_count 5", zetaPro(`{"prompt":"ppp"}`, `,"image_count":5`), []problem{{"image_count", "got 5"}}},
		{"image_count 1.5", zetaPro(`{"prompt":"ppp"}`, `,"image_count":1.5`), []problem{{"image_count", "got 1.5"}}},
		{"image_count 2.0", zetaPro(`{"prompt":"ppp"}`, `,"image_count":2.0`), []problem{{"image_count", "got 2.0"}}},
		{"image_count as string", zetaPro(`{"prompt":"ppp"}`, `,"image_count":"2"`), []problem{{"image_count", "got a string"}}},
		{"image_count as boolean", zetaPro(`{"prompt":"ppp"}`, `,"image_count":true`), []problem{{"image_count", "got a boolean"}}},
		{"image_count huge", zetaPro(`{"prompt":"ppp"}`, `,"image_count":100000000000000000000000000000`), []problem{{"image_count", "got 1000"}}},
		{"image_count 2 on video", alpha(`{"prompt":"p"},"image_count":2`), []problem{{"image_count", "must be 1 for video variants"}}},
		{"num_images and image_count differ", zetaPro(`{"prompt":"ppp","num_images":"3"}`, `,"image_count":2`),
			[]problem{{"image_count", `is 2 but input.num_images is "3"`}}},
		// Image references.
		{"http URL", gamma(`"http://example.com/a.png"`), []problem{{"input.start_image", "plain http is not accepted"}}},
		{"javascript URL", gamma(`"javascript:alert(1)"`), []problem{{"input.start_image", "must be an https URL, a data:image/(png|jpeg|webp|gif);base64 URI or a file URL"}}},
		{"file URL of no file id", gamma(`"mediagen://files/../../generations/x"`), []problem{{"input.start_image", "file URL must be mediagen://files/<file_id>"}}},
		{"relative URL", gamma(`"/a.png"`), []problem{{"input.start_image", "must be an https URL"}}},
		{"https without host", gamma(`"https:///a.png"`), []problem{{"input.start_image", "must be an https URL"}}},
		{"https loopback", gamma(`"https://127.0.0.1/x"`), []problem{{"input.start_image", `host "127.0.0.1" is not a public address`}}},
		{"https private", gamma(`"https://10.0.0.1/x"`), []problem{{"input.start_image", "not a public address"}}},
		{"https link-local metadata", gamma(`"https://169.254.169.254/latest"`), []problem{{"input.start_image", "not a public address"}}},
		{"https IPv6 loopback", gamma(`"https://[::1]/x"`), []problem{{"input.start_image", "not a public address"}}},
		{"https IPv4-mapped private", gamma(`"https://[::ffff:192.168.0.1]/x"`), []problem{{"input.start_image", "not a public address"}}},
		{"https localhost", gamma(`"https://localhost:8443/x"`), []problem{{"input.start_image", "not a public address"}}},
		{"https decimal IP", gamma(`"https://2130706433/x"`), []problem{{"input.start_image", "not a public address"}}},
		{"https short IP", gamma(`"https://127.1/x"`), []problem{{"input.start_image", "not a public address"}}},
		{"https with credentials", gamma(`"https://user:pw@example.com/x"`), []problem{{"input.start_image", "user name or password"}}},
		{"data URI of another type", gamma(`"data:text/plain;base64,aGVsbG8="`), []problem{{"input.start_image", "data URI must be data:image/(png|jpeg|webp|gif);base64"}}},
		{"data URI not base64", gamma(`"data:image/png;base64,@@@@"`), []problem{{"input.start_image", "not valid base64"}}},
		{"data URI without base64", gamma(`"data:image/png,abc"`), []problem{{"input.start_image", "data URI must be"}}},
		{"data URI that is no image", gamma(`"data:image/png;base64,aGVsbG8gd29ybGQ="`), []problem{{"input.start_image", "does not hold a PNG"}}},
		{"empty image list", zeta(`[]`), []problem{{"input.image_input", "must hold 1 to 8 images, got 0"}}},
		{"image list too long", zeta(`[` + strings.Repeat(`"https://example.com/a.png",`, 8) + `"https://example.com/a.png"]`),
			[]problem{{"input.image_input", "must hold 1 to 8 images, got 9"}}},
		{"image list not an array", zeta(`"https://example.com/a.png"`), []problem{{"input.image_input", "must be an array"}}},
		{"bad item in image list", zeta(`["https://example.com/a.png", "http://example.com/b.png", 3]`),
			[]problem{{"input.image_input[1]", "plain http"}, {"input.image_input[2]", "got a number"}}},
		{"beta-2-enchanted takes two reference images", `{"model":"provider-b","model_version":"beta-2-enchanted","input":{"prompt":"p","image_urls":["https://a.example/1","https://a.example/2","https://a.example/3"]}}`,
			[]problem{{"input.image_urls", "must hold 1 to 2 images, got 3"}}},
		// Bodies that are not one JSON object.
		{"array body", `[{"model":"provider-a"}]`, []problem{{"body", "must be a JSON object, got an array"}}},
		{"null body", `null`, []problem{{"body", "must be a JSON object, got null"}}},
		{"string body", `"hi"`, []problem{{"body", "must be a JSON object, got a string"}}},
		{"number body", `12`, []problem{{"body", "must be a JSON object, got a number"}}},
		{"empty body", ``, []problem{{"body", "is empty"}}},
		{"trailing garbage", alpha(`{"prompt":"p"}`) + ` x`, []problem{{"body", "data after the JSON object"}}},
		{"second object", alpha(`{"prompt":"p"}`) + `{}`, []problem{{"body", "data after the JSON object"}}},
		{"truncated", `{"model":"provider-a"`, []problem{{"body", "is not valid JSON"}}},
		{"syntax error", `{"model" "provider-a"}`, []problem{{"body", "is not valid JSON"}}},
		{"duplicate top-level key", `{"model":"provider-a","model":"provider-b","model_version":"zeta","input":{"prompt":"p"}}`,
			[]problem{{"body", `has the key "model" twice`}}},
		{"duplicate input key", alpha(`{"prompt":"cheap","prompt":"expensive"}`), []problem{{"body", `has the key "input.prompt" twice`}}},
		{"deep nesting", `{"input":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}`, []problem{{"body", "nested deeper than 32 levels"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseGenerate([]byte(tt.body), Options{})
			wantProblems(t, err, tt.want...)
		})
	}
}

func TestPromptAtExactlyItsLimitsIsAccepted(t *testing.T) {
	tests := []struct{ version, prompt string }{
		{"alpha-3.1-fast", strings.Repeat("é", alphaPromptMaxLen)}, // characters, not bytes
		{"zeta-pro", strings.Repeat("x", ZetaProPromptMaxLen)},
		{"zeta-pro", "abc"},
		{"zeta-pro", "日本語"},
	}
	for _, tt := range tests {
		v, _ := LookupVersion(tt.version)
		if _, err := ParseGenerate(body(t, v.Model, v.Version, map[string]any{"prompt": tt.prompt}), Options{}); err != nil {
			t.Errorf("%s with a %d-character prompt: %v", tt.version, len([]rune(tt.prompt)), err)
		}
	}
}

func TestNonUTF8BodyIsRejected(t *testing.T) {
	b := []byte(`{"model":"provider-a","model_version":"zeta","input":{"prompt":"caf` + "\xe9" + `"}}`)
	_, err := ParseGenerate(b, Options{})
	wantProblems(t, err, problem{"body", "is not valid UTF-8"})
}

func TestDataURILimit(t *testing.T) {
	payload := bytes.Repeat([]byte{0}, 1000)
	copy(payload, "\x89PNG\x0d\x0a\x1a\x0a")
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(payload)
	in := map[string]any{"prompt": "p", "start_image": uri}
	if _, err := ParseGenerate(body(t, "provider-c", "gamma-v2.1", in), Options{MaxDataURIBytes: 1000}); err != nil {
		t.Fatalf("a data URI of exactly the limit: %v", err)
	}
	_, err := ParseGenerate(body(t, "provider-c", "gamma-v2.1", in), Options{MaxDataURIBytes: 999})
	wantProblems(t, err, problem{"input.start_image", "must be at most 999 bytes, got 1000"})

	big := "data:image/png;base64," + base64.StdEncoding.EncodeToString(make([]byte, DefaultMaxDataURIBytes+3))
	_, err = ParseGenerate(body(t, "provider-c", "gamma-v2.1", map[string]any{"prompt": "p", "start_image": big}), Options{})
	wantProblems(t, err, problem{"input.start_image", fmt.Sprintf("must be at most %d bytes", DefaultMaxDataURIBytes)})
}

func TestImageReferencesThatAreAccepted(t *testing.T) {
	tests := []struct {
		ref  string
		opts Options
	}{
		{"https://cdn.example.com/a.png?sig=1", Options{}},
		{"HTTPS://Example.COM/a.png", Options{}},
		{"https://8.8.8.8/a.png", Options{}},
		{"https://[2001:4860:4860::8888]/a.png", Options{}},
		{pngDataURI, Options{}},
		{strings.Replace(pngDataURI, "data:image/png", "DATA:IMAGE/PNG", 1), Options{}},
		{"http://127.0.0.1:9000/bucket/a.png", Options{AllowLoopbackURLs: true}},
		{"http://localhost:9000/a.png", Options{AllowLoopbackURLs: true}},
		{"https://127.0.0.1/a.png", Options{AllowLoopbackURLs: true}},
	}
	for _, tt := range tests {
		in := map[string]any{"prompt": "p", "start_image": tt.ref}
		if _, err := ParseGenerate(body(t, "provider-c", "gamma-v2.1", in), tt.opts); err != nil {
			t.Errorf("%.60s with %+v: %v", tt.ref, tt.opts, err)
		}
	}
	// Loopback is admitted for local runs only, and never over plain http to
	// another host.
	for _, ref := range []string{"http://10.0.0.1/a.png", "http://example.com/a.png"} {
		in := map[string]any{"prompt": "p", "start_image": ref}
		_, err := ParseGenerate(body(t, "provider-c", "gamma-v2.1", in), Options{AllowLoopbackURLs: true})
		wantProblems(t, err, problem{"input.start_image", "plain http"})
	}
}

func TestImageCount(t *testing.T) {
	tests := []struct {
		name    string
		version string
		input   map[string]any
		count   any // nil = absent
		want    int
	}{
		{"default is one", "zeta", map[string]any{"prompt": "p"}, nil, 1},
		{"image variant takes four", "iota-v3-turbo", map[string]any{"prompt": "p"}, 4, 4},
		{"video accepts one", "video-01", map[string]any{"prompt": "p"}, 1, 1},
		{"num_images sets the count", "zeta-pro", map[string]any{"prompt": "ppp", "num_images": "3"}, nil, 3},
		{"num_images as a number", "zeta-pro", map[string]any{"prompt": "ppp", "num_images": 2}, nil, 2},
		{"num_images equal to image_count", "zeta-pro", map[string]any{"prompt": "ppp", "num_images": "4"}, 4, 4},
		{"image_count alone on zeta-pro", "zeta-pro", map[string]any{"prompt": "ppp"}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _ := LookupVersion(tt.version)
			var extra []any
			if tt.count != nil {
				extra = []any{"image_count", tt.count}
			}
			req, err := ParseGenerate(body(t, v.Model, v.Version, tt.input, extra...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if req.ImageCount != tt.want {
				t.Fatalf("ImageCount = %d, want %d", req.ImageCount, tt.want)
			}
			if _, ok := v.Field("num_images"); ok && req.Resolved["num_images"] != fmt.Sprint(tt.want) {
				t.Fatalf("Resolved num_images = %v, want %d", req.Resolved["num_images"], tt.want)
			}
		})
	}
}

func TestEveryBadFieldIsReportedAtOnce(t *testing.T) {
	b := `{"model":"provider-a","model_version":"alpha-3.1-fast","image_count":3,"extra":1,
		"input":{"prompt":"","duration":"5","resolution":"4K","generate_audio":"yes","foo":1,"bar":2}}`
	_, err := ParseGenerate([]byte(b), Options{})
	wantProblems(t, err,
		problem{"extra", `unknown field "extra"`},
		problem{"image_count", "must be 1 for video variants"},
		problem{"input.bar", `unknown field "bar"`},
		problem{"input.duration", `must be one of "4", "6", "8"`},
		problem{"input.foo", `unknown field "foo"`},
		problem{"input.generate_audio", "must be true or false"},
		problem{"input.prompt", "must not be empty"},
		problem{"input.resolution", `must be one of "720p", "1080p"`},
	)
	if msg := err.Error(); !strings.Contains(msg, `input.duration: must be one of "4", "6", "8"`) {
		t.Errorf("Error() = %q, want each detail as field: message", msg)
	}
}

func TestValidationDetailsAreStable(t *testing.T) {
	b := []byte(`{"model":"provider-a","model_version":"zeta-pro","input":{"z":1,"y":2,"x":3,"a":4,"prompt":"p"}}`)
	_, first := ParseGenerate(b, Options{})
	for range 20 {
		_, err := ParseGenerate(b, Options{})
		if err.Error() != first.Error() {
			t.Fatalf("details changed between runs:\n%v\n%v", first, err)
		}
	}
	var ve *ValidationError
	errors.As(first, &ve)
	if !slices.IsSortedFunc(ve.Details, func(a, b FieldError) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.Message, b.Message))
	}) {
		t.Fatalf("details not sorted: %+v", ve.Details)
	}
}

func TestFieldErrorMarshalsAsTheEnvelopeDetail(t *testing.T) {
	b, err := json.Marshal(FieldError{Field: "input.duration", Message: "must be one of"})
	if err != nil || string(b) != `{"field":"input.duration","message":"must be one of"}` {
		t.Fatalf("json = %s, %v", b, err)
	}
}

func TestParseGenerateWebhook(t *testing.T) {
	base := `"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"fox"}`
	tests := []struct {
		name, fields string
		opts         Options
		want         domain.Webhook
		problem      string // a detail's field; "" = valid
	}{
		{"none", ``, Options{}, domain.Webhook{}, ""},
		{"https with all events", `,"webhook_url":"https://hooks.example.com/x"`, Options{},
			domain.Webhook{URL: "https://hooks.example.com/x"}, ""},
		{"chosen events, duplicates once", `,"webhook_url":"https://hooks.example.com/x","webhook_events":["generation.failed","generation.failed"]`,
			Options{}, domain.Webhook{URL: "https://hooks.example.com/x", Events: []string{"generation.failed"}}, ""},
		{"plain http", `,"webhook_url":"http://hooks.example.com/x"`, Options{}, domain.Webhook{}, "webhook_url"},
		{"loopback in production", `,"webhook_url":"https://127.0.0.1/x"`, Options{}, domain.Webhook{}, "webhook_url"},
		{"metadata address", `,"webhook_url":"https://169.254.169.254/latest"`, Options{}, domain.Webhook{}, "webhook_url"},
		{"an allowed loopback port in local mode", `,"webhook_url":"http://127.0.0.1:9/x"`, Options{AllowLoopbackURLs: true, WebhookLoopbackPorts: []uint16{9}},
			domain.Webhook{URL: "http://127.0.0.1:9/x"}, ""},
		{"the allowed port by another loopback name", `,"webhook_url":"http://localhost:9/x"`, Options{AllowLoopbackURLs: true, WebhookLoopbackPorts: []uint16{9}},
			domain.Webhook{URL: "http://localhost:9/x"}, ""},
		{"a loopback port not allowed", `,"webhook_url":"http://127.0.0.1:22/x"`, Options{AllowLoopbackURLs: true, WebhookLoopbackPorts: []uint16{9}},
			domain.Webhook{}, "webhook_url"},
		{"loopback without a port allowed", `,"webhook_url":"http://[::1]:9/x"`, Options{AllowLoopbackURLs: true}, domain.Webhook{}, "webhook_url"},
		{"loopback on the scheme's port", `,"webhook_url":"http://127.0.0.1/x"`, Options{AllowLoopbackURLs: true, WebhookLoopbackPorts: []uint16{9}},
			domain.Webhook{}, "webhook_url"},
		{"data URI", `,"webhook_url":"data:image/png;base64,AA=="`, Options{}, domain.Webhook{}, "webhook_url"},
		{"not a string", `,"webhook_url":42`, Options{}, domain.Webhook{}, "webhook_url"},
		{"unknown event", `,"webhook_url":"https://hooks.example.com/x","webhook_events":["long_video.completed"]`, Options{}, domain.Webhook{}, "webhook_events[0]"},
		{"empty events", `,"webhook_url":"https://hooks.example.com/x","webhook_events":[]`, Options{}, domain.Webhook{}, "webhook_events"},
		{"events without url", `,"webhook_events":["generation.failed"]`, Options{}, domain.Webhook{}, "webhook_events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseGenerate([]byte(`{`+base+tt.fields+`}`), tt.opts)
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("ParseGenerate: %v", err)
				}
				if req.Webhook.URL != tt.want.URL || !slices.Equal(req.Webhook.Events, tt.want.Events) {
					t.Errorf("webhook = %+v, want %+v", req.Webhook, tt.want)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a validation error on %s", err, tt.problem)
			}
			found := false
			for _, d := range ve.Details {
				found = found || d.Field == tt.problem
			}
			if !found {
				t.Errorf("details %+v do not name %s", ve.Details, tt.problem)
			}
		})
	}
}
