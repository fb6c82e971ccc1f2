package catalog

import (
	"errors"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// FuzzParseGenerate: any body either parses into a request of a known
// variant with a sane image count, or is refused with a validation error
// (never a panic, never another error). Seeds are the spec's sample bodies.
func FuzzParseGenerate(f *testing.F) {
	for _, seed := range []string{
		`{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"a fox","duration":"8","resolution":"1080p","aspect_ratio":"16:9","generate_audio":true},"image_count":1}`,
		`{"model":"provider-b","model_version":"beta-2","input":{"prompt":"a city","seconds":"4","aspect_ratio":"landscape"},"image_count":1}`,
		`{"model":"provider-c","model_version":"gamma-v2.1","input":{"mode":"standard","prompt":"x","duration":"5","start_image":"data:image/png;base64,iVBORw0KGgo="},"image_count":1}`,
		`{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"abc","num_images":"4","resolution":"4K","output_format":"webp"},"image_count":4}`,
		`{"model":"provider-g","model_version":"iota-v3-turbo","input":{"prompt":"poster","aspect_ratio":"1:3"}}`,
		`{"model":"provider-a","model_version":"zeta","input":{"prompt":"x","image_input":["https://example.com/a.png"]},"image_count":2}`,
		`{"a":{"a":{"a":{"a":{}}}}}`, `[]`, `{"model":1}`, "{\"model\":\"\xff\"}", `{"model":"provider-a","model":"provider-b"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseGenerate(body, Options{})
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, domain.ErrInvalid) || len(ve.Details) == 0 {
				t.Fatalf("refused with %T %v, want a *ValidationError with details", err, err)
			}
			return
		}
		if _, err := Lookup(req.Variant.Model, req.Variant.Version); err != nil {
			t.Fatalf("accepted an unknown variant %s/%s", req.Variant.Model, req.Variant.Version)
		}
		if req.ImageCount < 1 || req.ImageCount > MaxImageCount || (req.Variant.Kind == domain.MediaVideo && req.ImageCount != 1) {
			t.Fatalf("accepted image_count %d for a %s variant", req.ImageCount, req.Variant.Kind)
		}
		if p, _ := req.Input["prompt"].(string); p == "" {
			t.Fatal("accepted a request without a prompt")
		}
	})
}
