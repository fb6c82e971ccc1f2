package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
)

// TestBodyEventSizeIsTheBodysLengthInTheEvent: the size counted is the
// body's length as a JSON string's content in the event (escapes
// included), or its base64 text as it stands.
func TestBodyEventSizeIsTheBodysLengthInTheEvent(t *testing.T) {
	bodies := []string{
		``, `{"prompt":"a fox"}`, `{"prompt":"say \"hi\" \\ there"}`, "{\"prompt\":\"line\\nbreak\ttab\"}",
		"raw\ncontrol\x01\x1f\b\f\r", "unicode é ☃ 🦊 \u2028 \u2029", `<html> & </html>`,
	}
	for _, body := range bodies {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			t.Fatal(err)
		}
		want := buf.Len() - len("\"\"\n")
		if got := BodyEventSize(body, false); got != want {
			t.Errorf("BodyEventSize(%q) = %d, want %d (%s)", body, got, want, buf.Bytes())
		}
	}
	if got := BodyEventSize("eyJhIjoxfQ==", true); got != 12 {
		t.Errorf("a base64 body counts %d, want its 12 characters", got)
	}
}

// TestABodyOverTheLimitGetsTheServices413: a body whose event form is
// over MaxBodyBytes, and only such a body, answers 413 body_too_large in
// the envelope, whether its escapes or its base64 push it over.
func TestABodyOverTheLimitGetsTheServices413(t *testing.T) {
	// pad is a body of n characters s and 12 bytes more in the event
	// (its four quotes escaped), 8 more raw.
	pad := func(n int, s string) string { return `{"p":"` + strings.Repeat(s, n) + `"}` }
	rawAtLimit := MaxBodyBytes / 4 * 3 // whose base64 is MaxBodyBytes long
	tests := []struct {
		name     string
		body     string
		base64   bool
		tooLarge bool
	}{
		{"at the limit", pad(MaxBodyBytes-12, "a"), false, false},
		{"one byte over", pad(MaxBodyBytes-11, "a"), false, true},
		{"under the limit in bytes, over it with its escapes", pad((MaxBodyBytes-12)/2+1, `"`), false, true},
		{"base64-encoded at the limit", base64.StdEncoding.EncodeToString([]byte(pad(rawAtLimit-8, "a"))), true, false},
		{"base64-encoded over it", base64.StdEncoding.EncodeToString([]byte(pad(rawAtLimit-7, "a"))), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonBody(Request{Body: tt.body, IsBase64Encoded: tt.base64, Headers: map[string]string{"content-type": "application/json"}})
			var e *Error
			got := errors.As(err, &e) && e.Status == http.StatusRequestEntityTooLarge && e.Code == "body_too_large"
			if got != tt.tooLarge {
				t.Errorf("event size %d: error %v, want 413 body_too_large: %v", BodyEventSize(tt.body, tt.base64), err, tt.tooLarge)
			}
		})
	}
}

// TestTheLargestImageFitsTheBodyLimit: a generate body with one data URI
// image of the documented maximum and the longest prompt any variant
// takes (zeta-pro's, here in zeta's body) stays within MaxBodyBytes, so the image limit, not the body's,
// is what a client meets first with one image.
func TestTheLargestImageFitsTheBodyLimit(t *testing.T) {
	img := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(make([]byte, catalog.DefaultMaxDataURIBytes))
	if len(img) != catalog.MaxImageRefLength {
		t.Errorf("the largest data URI is %d characters, MaxImageRefLength says %d", len(img), catalog.MaxImageRefLength)
	}
	body, err := json.Marshal(map[string]any{"model": "provider-a", "model_version": "zeta", "image_count": 4,
		"webhook_url": "https://" + strings.Repeat("h", catalog.MaxURLLength-8),
		"input":       map[string]any{"prompt": strings.Repeat(`"`, catalog.ZetaProPromptMaxLen), "image_input": []string{img}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := BodyEventSize(string(body), false); n > MaxBodyBytes {
		t.Errorf("the body takes %d bytes in the event, over MaxBodyBytes %d", n, MaxBodyBytes)
	}
}
