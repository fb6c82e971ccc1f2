package catalog

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func TestAllListsTheSpecVariantsInOrder(t *testing.T) {
	want := []struct {
		model, version string
		kind           domain.MediaKind
	}{
		{"provider-a", "alpha-3.1-fast", domain.MediaVideo},
		{"provider-b", "beta-2-enchanted", domain.MediaVideo},
		{"provider-b", "beta-2", domain.MediaVideo},
		{"provider-c", "gamma-v2.1", domain.MediaVideo},
		{"provider-d", "video-01", domain.MediaVideo},
		{"provider-e", "delta-1-pro", domain.MediaVideo},
		{"provider-d", "epsilon-02", domain.MediaVideo},
		{"provider-a", "zeta-pro", domain.MediaImage},
		{"provider-a", "zeta", domain.MediaImage},
		{"provider-f", "eta-context-max", domain.MediaImage},
		{"provider-a", "theta-4-fast", domain.MediaImage},
		{"provider-g", "iota-v3-turbo", domain.MediaImage},
	}
	all := All()
	if len(all) != len(want) {
		t.Fatalf("All() has %d variants, want %d", len(all), len(want))
	}
	for i, w := range want {
		v := all[i]
		if v.Model != w.model || v.Version != w.version || v.Kind != w.kind {
			t.Errorf("variant %d = %s/%s %s, want %s/%s %s", i+1, v.Model, v.Version, v.Kind, w.model, w.version, w.kind)
		}
		if v.UpstreamModel != w.model+"/"+w.version {
			t.Errorf("%s: UpstreamModel = %q", v.Version, v.UpstreamModel)
		}
	}
	if got := VideoVersions(); !slices.Equal(got, []string{"alpha-3.1-fast", "beta-2-enchanted", "beta-2", "gamma-v2.1", "video-01", "delta-1-pro", "epsilon-02"}) {
		t.Errorf("VideoVersions() = %v", got)
	}
}

// The field lists, types, required flags and enum sets are the spec's
// per-variant tables.
func TestVariantFieldsMatchTheSpec(t *testing.T) {
	type f struct {
		name     string
		typ      FieldType
		required bool
		enum     []string
	}
	e := func(name string, values ...string) f { return f{name, TypeEnum, false, values} }
	prompt := f{"prompt", typeString, true, nil}
	want := map[string][]f{
		"alpha-3.1-fast": {prompt, {"auto_fix", TypeBoolean, false, nil}, e("duration", "4", "6", "8"), e("resolution", "720p", "1080p"),
			e("aspect_ratio", "16:9", "9:16"), {"generate_audio", TypeBoolean, false, nil}, {"negative_prompt", typeString, false, nil}},
		"beta-2-enchanted": {prompt, e("duration", "10", "15"), e("n_frames", "10", "15"), {"image_urls", TypeImageList, false, nil},
			e("aspect_ratio", "landscape", "portrait"), {"remove_watermark", TypeBoolean, false, nil}},
		"beta-2": {prompt, {"seconds", TypeEnum, true, []string{"4", "8", "12"}}, {"aspect_ratio", TypeEnum, true, []string{"landscape", "portrait"}},
			{"input_reference", TypeImage, false, nil}},
		"gamma-v2.1": {e("mode", "standard", "pro"), prompt, e("duration", "5", "10"), {"start_image", TypeImage, true, nil}},
		"video-01":   {prompt, {"first_frame_image", TypeImage, false, nil}, {"subject_reference", TypeImage, false, nil}},
		"delta-1-pro": {e("fps", "24"), {"image", TypeImage, false, nil}, prompt, e("duration", "5", "10"), e("resolution", "480p", "1080p"),
			e("aspect_ratio", "16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "9:21"), {"camera_fixed", TypeBoolean, false, nil}},
		"epsilon-02": {prompt, e("duration", "6", "10"), e("resolution", "512p", "768p", "1080p"), {"first_frame_image", TypeImage, false, nil}},
		"zeta-pro": {prompt, e("num_images", "1", "2", "3", "4"), e("resolution", "1K", "2K", "4K"),
			e("aspect_ratio", "21:9", "16:9", "3:2", "4:3", "5:4", "1:1", "4:5", "3:4", "2:3", "9:16"), e("output_format", "jpeg", "png", "webp"),
			{"enable_web_search", TypeBoolean, false, nil}},
		"zeta": {prompt, {"image_input", TypeImageList, false, nil}},
		// match_input_image is the spec's default, accepted when sent too.
		"eta-context-max": {prompt, {"input_image", TypeImage, false, nil}, e("aspect_ratio", "1:1", "16:9", "9:16", "match_input_image")},
		"theta-4-fast":    {prompt, e("aspect_ratio", "4:3", "3:4", "16:9", "9:16", "1:1")},
		"iota-v3-turbo":   {prompt, e("aspect_ratio", "3:2", "3:4", "4:3", "4:5", "1:1", "16:9", "9:16", "1:3")},
	}
	for _, v := range All() {
		var got []f
		for _, fl := range v.Fields {
			got = append(got, f{fl.Name, fl.Type, fl.Required, fl.Enum})
		}
		if len(got) != len(want[v.Version]) {
			t.Errorf("%s: fields %v, want %v", v.Version, got, want[v.Version])
			continue
		}
		for i := range got {
			g, w := got[i], want[v.Version][i]
			if g.name != w.name || g.typ != w.typ || g.required != w.required || !slices.Equal(g.enum, w.enum) {
				t.Errorf("%s field %d = %+v, want %+v", v.Version, i, g, w)
			}
		}
	}
}

func TestDefaultsAreValidValuesOfTheirFields(t *testing.T) {
	for _, v := range All() {
		for _, f := range v.Fields {
			switch {
			case f.Default == "":
			case f.Type == TypeEnum && !slices.Contains(f.Enum, f.Default):
				t.Errorf("%s.%s: default %q not in %v", v.Version, f.Name, f.Default, f.Enum)
			case f.Type == TypeBoolean && f.Default != "true" && f.Default != "false":
				t.Errorf("%s.%s: boolean default %q", v.Version, f.Name, f.Default)
			case f.Type != TypeEnum && f.Type != TypeBoolean:
				t.Errorf("%s.%s: a %s field has a default", v.Version, f.Name, f.Type)
			}
			if f.Required && f.Default != "" {
				t.Errorf("%s.%s: required and defaulted", v.Version, f.Name)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	v, err := Lookup("provider-d", "video-01")
	if err != nil || v.FixedDurationSeconds != 6 {
		t.Fatalf("Lookup(video-01) = %+v, %v", v, err)
	}
	for _, tt := range []struct{ model, version string }{{"provider-x", "beta-2"}, {"provider-a", "beta-2"}, {"provider-b", "nope"}} {
		if _, err := Lookup(tt.model, tt.version); !errors.Is(err, ErrUnknownVariant) {
			t.Errorf("Lookup(%s, %s) = %v, want ErrUnknownVariant", tt.model, tt.version, err)
		}
	}
	if v, err := LookupVersion("beta-2"); err != nil || v.Model != "provider-b" {
		t.Errorf("LookupVersion(beta-2) = %+v, %v", v, err)
	}
}

func TestAllReturnsACopy(t *testing.T) {
	a := All()
	a[0].Fields[2].Enum[0] = "999"
	a[0].Fields = nil
	if f, _ := All()[0].Field("duration"); f.Enum[0] != "4" {
		t.Fatal("changing All()'s result changed the catalog")
	}
}

func TestDurationSeconds(t *testing.T) {
	tests := []struct {
		version  string
		resolved map[string]any
		want     int
	}{
		{"alpha-3.1-fast", nil, 8},
		{"alpha-3.1-fast", map[string]any{"duration": "4"}, 4},
		{"beta-2-enchanted", nil, 10},
		{"beta-2-enchanted", map[string]any{"n_frames": "15"}, 15},
		{"beta-2", map[string]any{"seconds": "12"}, 12},
		{"gamma-v2.1", nil, 5},
		{"video-01", nil, 6},
		{"delta-1-pro", map[string]any{"duration": "10"}, 10},
		{"epsilon-02", nil, 6},
		{"zeta-pro", map[string]any{"duration": "10"}, 0},
		{"iota-v3-turbo", nil, 0},
	}
	for _, tt := range tests {
		v, _ := LookupVersion(tt.version)
		if got := v.DurationSeconds(tt.resolved); got != tt.want {
			t.Errorf("%s DurationSeconds(%v) = %d, want %d", tt.version, tt.resolved, got, tt.want)
		}
	}
}

func TestNearestDurationPrefersTheLongerClipOnATie(t *testing.T) {
	tests := []struct {
		version string
		want    int // for a 5 s scene
	}{
		{"alpha-3.1-fast", 6}, {"beta-2-enchanted", 10}, {"beta-2", 4}, {"gamma-v2.1", 5},
		{"video-01", 6}, {"delta-1-pro", 5}, {"epsilon-02", 6}, {"zeta", 0},
	}
	for _, tt := range tests {
		v, _ := LookupVersion(tt.version)
		if got := v.NearestDuration(5); got != tt.want {
			t.Errorf("%s NearestDuration(5) = %d, want %d (durations %v)", tt.version, got, tt.want, v.Durations())
		}
	}
}

func TestResolveFillsDefaultsAndAlignsLengthFields(t *testing.T) {
	tests := []struct {
		version string
		input   map[string]any
		want    map[string]any
	}{
		{"alpha-3.1-fast", map[string]any{"prompt": "p"},
			map[string]any{"prompt": "p", "duration": "8", "resolution": "720p", "aspect_ratio": "16:9", "generate_audio": false}},
		{"beta-2-enchanted", map[string]any{"prompt": "p", "n_frames": "15"},
			map[string]any{"prompt": "p", "duration": "15", "n_frames": "15", "aspect_ratio": "landscape"}},
		{"beta-2-enchanted", map[string]any{"prompt": "p"},
			map[string]any{"prompt": "p", "duration": "10", "n_frames": "10", "aspect_ratio": "landscape"}},
		{"gamma-v2.1", map[string]any{"prompt": "p", "start_image": "https://example.com/a.png"},
			map[string]any{"prompt": "p", "start_image": "https://example.com/a.png", "mode": "standard", "duration": "5"}},
		{"delta-1-pro", map[string]any{"prompt": "p", "camera_fixed": true},
			map[string]any{"prompt": "p", "camera_fixed": true, "fps": "24", "duration": "5", "resolution": "1080p", "aspect_ratio": "16:9"}},
		{"epsilon-02", map[string]any{"prompt": "p"}, map[string]any{"prompt": "p", "duration": "6", "resolution": "768p"}},
		{"zeta-pro", map[string]any{"prompt": "ppp"},
			map[string]any{"prompt": "ppp", "resolution": "1K", "output_format": "png", "aspect_ratio": "1:1"}},
		{"eta-context-max", map[string]any{"prompt": "p"}, map[string]any{"prompt": "p", "aspect_ratio": "match_input_image"}},
		{"theta-4-fast", map[string]any{"prompt": "p"}, map[string]any{"prompt": "p", "aspect_ratio": "1:1"}},
		{"iota-v3-turbo", map[string]any{"prompt": "p", "aspect_ratio": "1:3"}, map[string]any{"prompt": "p", "aspect_ratio": "1:3"}},
		{"video-01", map[string]any{"prompt": "p"}, map[string]any{"prompt": "p"}},
	}
	for _, tt := range tests {
		v, _ := LookupVersion(tt.version)
		got := v.Resolve(tt.input)
		if len(got) != len(tt.want) {
			t.Errorf("%s Resolve = %v, want %v", tt.version, got, tt.want)
			continue
		}
		for k, w := range tt.want {
			if got[k] != w {
				t.Errorf("%s Resolve[%s] = %v, want %v", tt.version, k, got[k], w)
			}
		}
	}
}

func TestDurationsAreNumbers(t *testing.T) {
	for _, version := range VideoVersions() {
		v, _ := LookupVersion(version)
		f, ok := v.DurationField()
		if !ok {
			continue
		}
		for _, s := range f.Enum {
			if _, err := strconv.Atoi(s); err != nil {
				t.Errorf("%s.%s: %q is not a number of seconds", version, f.Name, s)
			}
		}
	}
}

// TestEveryTextFieldHasADocumentedMaximum: no text field is unbounded, the
// spec's prompt limits hold, no prompt is over the default bound, and
// fields such as negative_prompt are far shorter than a prompt.
func TestEveryTextFieldHasADocumentedMaximum(t *testing.T) {
	want := map[string]int{"alpha-3.1-fast": 20000, "zeta-pro": 50000, "gamma-v2.1": 2500, "video-01": 2000, "epsilon-02": 2000}
	for _, v := range All() {
		for _, f := range v.Fields {
			if f.Type != typeString {
				continue
			}
			if f.MaxLen <= 0 {
				t.Errorf("%s: %s has no maximum length", v.Version, f.Name)
				continue
			}
			if f.Name == "prompt" {
				limit, ok := want[v.Version]
				if !ok {
					limit = promptMaxLen
				}
				if f.MaxLen != limit {
					t.Errorf("%s: prompt is bounded at %d, want %d", v.Version, f.MaxLen, limit)
				}
				continue
			}
			if f.MaxLen > promptMaxLen/5 {
				t.Errorf("%s: %s takes up to %d characters; a field beside the prompt takes much less", v.Version, f.Name, f.MaxLen)
			}
		}
	}
	if zp, _ := LookupVersion("zeta-pro"); zp.Fields[0].MinLen != 3 {
		t.Errorf("zeta-pro's prompt has minimum %d, want the spec's 3", zp.Fields[0].MinLen)
	}
}
