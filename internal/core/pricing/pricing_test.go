package pricing

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func parse(t *testing.T, body string) catalog.Request {
	t.Helper()
	req, err := catalog.ParseGenerate([]byte(body), catalog.Options{})
	if err != nil {
		t.Fatalf("ParseGenerate(%s): %v", body, err)
	}
	return req
}

func TestDefaultQuotes(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		baseUSD string
		credits string
	}{
		// beta-2: 0.10 USD/s for each of its three durations (spec).
		{"beta-2 4 s", `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"p","seconds":"4","aspect_ratio":"portrait"}}`, "0.40", "52.00"},
		{"beta-2 8 s", `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"p","seconds":8,"aspect_ratio":"portrait"}}`, "0.80", "104.00"},
		{"beta-2 12 s", `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"p","seconds":"12","aspect_ratio":"landscape"}}`, "1.20", "156.00"},
		{"beta-2-enchanted default 10 s", `{"model":"provider-b","model_version":"beta-2-enchanted","input":{"prompt":"p"}}`, "1.00", "130.00"},
		{"beta-2-enchanted 15 s", `{"model":"provider-b","model_version":"beta-2-enchanted","input":{"prompt":"p","duration":"15"}}`, "1.50", "195.00"},
		{"beta-2-enchanted 15 s via n_frames", `{"model":"provider-b","model_version":"beta-2-enchanted","input":{"prompt":"p","n_frames":"15"}}`, "1.50", "195.00"},
		// alpha: per second by resolution and audio; defaults 8 s, 720p, no audio.
		{"alpha defaults", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"p"}}`, "0.80", "104.00"},
		{"alpha 4 s 720p", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"p","duration":"4"}}`, "0.40", "52.00"},
		{"alpha 1080p", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"p","resolution":"1080p"}}`, "0.96", "124.80"},
		{"alpha 720p audio", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"p","generate_audio":true}}`, "1.20", "156.00"},
		{"alpha 1080p audio 6 s", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"p","generate_audio":true,"resolution":"1080p","duration":6}}`, "1.20", "156.00"},
		{"alpha audio off explicitly", `{"model":"provider-a","model_version":"alpha-3.1-fast","input":{"prompt":"p","generate_audio":false,"resolution":"1080p"}}`, "0.96", "124.80"},
		// gamma: per second by mode.
		{"gamma standard 5 s", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"p","start_image":"https://example.com/a.png"}}`, "0.25", "32.50"},
		{"gamma pro 10 s", `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"p","mode":"pro","duration":"10","start_image":"https://example.com/a.png"}}`, "0.90", "117.00"},
		{"video-01 fixed", `{"model":"provider-d","model_version":"video-01","input":{"prompt":"p"}}`, "0.50", "65.00"},
		{"delta 10 s", `{"model":"provider-e","model_version":"delta-1-pro","input":{"prompt":"p","duration":"10"}}`, "0.60", "78.00"},
		// epsilon: six fixed amounts by duration and resolution.
		{"epsilon defaults 6 s 768p", `{"model":"provider-d","model_version":"epsilon-02","input":{"prompt":"p"}}`, "0.27", "35.10"},
		{"epsilon 10 s 768p", `{"model":"provider-d","model_version":"epsilon-02","input":{"prompt":"p","duration":"10"}}`, "0.45", "58.50"},
		{"epsilon 6 s 512p", `{"model":"provider-d","model_version":"epsilon-02","input":{"prompt":"p","resolution":"512p"}}`, "0.12", "15.60"},
		{"epsilon 10 s 512p", `{"model":"provider-d","model_version":"epsilon-02","input":{"prompt":"p","resolution":"512p","duration":10}}`, "0.20", "26.00"},
		{"epsilon 6 s 1080p", `{"model":"provider-d","model_version":"epsilon-02","input":{"prompt":"p","resolution":"1080p"}}`, "0.48", "62.40"},
		{"epsilon 10 s 1080p", `{"model":"provider-d","model_version":"epsilon-02","input":{"prompt":"p","resolution":"1080p","duration":"10"}}`, "0.80", "104.00"},
		// zeta-pro: per image, 4K at double.
		{"zeta-pro 1K", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"ppp"}}`, "0.14", "18.20"},
		{"zeta-pro 2K", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"ppp","resolution":"2K"}}`, "0.14", "18.20"},
		{"zeta-pro 4K", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"ppp","resolution":"4K"}}`, "0.28", "36.40"},
		{"zeta-pro 4K num_images 3", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"ppp","resolution":"4K","num_images":"3"}}`, "0.84", "109.20"},
		{"zeta-pro image_count 2", `{"model":"provider-a","model_version":"zeta-pro","input":{"prompt":"ppp"},"image_count":2}`, "0.28", "36.40"},
		// Fixed-price image variants are charged per image.
		{"zeta 1", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"}}`, "0.039", "5.07"},
		{"zeta 3", `{"model":"provider-a","model_version":"zeta","input":{"prompt":"p"},"image_count":3}`, "0.117", "15.21"},
		{"eta 4", `{"model":"provider-f","model_version":"eta-context-max","input":{"prompt":"p"},"image_count":4}`, "0.32", "41.60"},
		{"theta 2", `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"p"},"image_count":2}`, "0.04", "5.20"},
		{"iota 1", `{"model":"provider-g","model_version":"iota-v3-turbo","input":{"prompt":"p"},"image_count":1}`, "0.03", "3.90"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Default().Quote(parse(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !q.BaseUSD.Equal(decimal.RequireFromString(tt.baseUSD)) {
				t.Errorf("BaseUSD = %s, want %s", q.BaseUSD, tt.baseUSD)
			}
			if got := domain.FormatCredits(q.Credits); got != tt.credits || !q.Credits.Equal(decimal.RequireFromString(tt.credits)) {
				t.Errorf("Credits = %s, want %s", q.Credits, tt.credits)
			}
		})
	}
}

// minimalFile returns a valid price file with every variant at usd, plus
// the given replacements of whole variant rules.
func minimalFile(margin, usd string, replace map[string]string) string {
	var parts []string
	for _, v := range catalog.All() {
		rl := `{"basis":"per_generation","usd":"` + usd + `"}`
		if r, ok := replace[v.Version]; ok { // "" leaves the variant out
			rl = r
		}
		if rl != "" {
			parts = append(parts, `"`+v.Version+`":`+rl)
		}
	}
	return `{"credits_per_usd":"100","profit_margin_percent":"` + margin + `","variants":{` + strings.Join(parts, ",") + `}}`
}

func TestCreditsAreRoundedUpToTheCent(t *testing.T) {
	tests := []struct {
		margin, usd string
		credits     string
	}{
		{"30", "0.0001", "0.02"},     // 0.013 credits → 0.02
		{"0", "0.00001", "0.01"},     // 0.001 → 0.01
		{"33.333", "0.01", "1.34"},   // 1.33333 → 1.34
		{"0", "0.01", "1.00"},        // exact stays
		{"12.5", "0.0808", "9.09"},   // 9.09 exactly
		{"12.5", "0.080801", "9.10"}, // 9.0901125 → 9.10
		{"0", "0", "0.00"},           // free stays free
		{"30", "123456789.01", "16049382571.30"},
	}
	for _, tt := range tests {
		table, err := load(strings.NewReader(minimalFile(tt.margin, tt.usd, nil)))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := catalog.LookupVersion("video-01")
		q, err := table.QuoteFor(v, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !q.Credits.Equal(decimal.RequireFromString(tt.credits)) || domain.FormatCredits(q.Credits) != tt.credits {
			t.Errorf("usd %s margin %s: credits %s, want %s", tt.usd, tt.margin, q.Credits, tt.credits)
		}
	}
}

func TestLoadRejectsBadFiles(t *testing.T) {
	perSecond := `{"basis":"per_second","usd":"0.10"}`
	tests := []struct {
		name string
		file string
		want []string // parts of the message
	}{
		{"not JSON", `{`, []string{"invalid price file"}},
		{"trailing data", minimalFile("30", "0.1", nil) + `{}`, []string{"data after the JSON object"}},
		{"unknown top-level key", `{"credits_per_usd":"100","profit_margin_percent":"30","variants":{},"currency":"EUR"}`, []string{`unknown field "currency"`}},
		{"missing variant", minimalFile("30", "0.1", map[string]string{"zeta": ""}), []string{"no price for zeta (provider-a)"}},
		{"unknown variant", strings.Replace(minimalFile("30", "0.1", nil), `"zeta":`, `"zeta-9":{"basis":"per_image","usd":"1"},"zeta":`, 1),
			[]string{"variants.zeta-9: not a variant of the catalog"}},
		{"negative amount", minimalFile("30", "0.1", map[string]string{"zeta": `{"basis":"per_image","usd":"-0.01"}`}), []string{"variants.zeta.usd: -0.01 is negative"}},
		{"negative margin", minimalFile("-5", "0.1", nil), []string{"profit_margin_percent: -5 is negative"}},
		{"amount as float text", minimalFile("30", "0.1", map[string]string{"zeta": `{"basis":"per_image","usd":"ten"}`}), []string{`variants.zeta.usd: "ten" is not a decimal number`}},
		{"zero credits per USD", strings.Replace(minimalFile("30", "0.1", nil), `"credits_per_usd":"100"`, `"credits_per_usd":"0"`, 1), []string{"credits_per_usd: must be greater than 0"}},
		{"bad basis", minimalFile("30", "0.1", map[string]string{"beta-2": `{"basis":"per_minute","usd":"1"}`}), []string{`variants.beta-2.basis: "per_minute" is not`}},
		{"per_second on an image", minimalFile("30", "0.1", map[string]string{"zeta": perSecond}), []string{"per_second needs a video variant"}},
		{"per_image on a video", minimalFile("30", "0.1", map[string]string{"beta-2": `{"basis":"per_image","usd":"1"}`}), []string{"per_image needs an image variant"}},
		{"case on unknown field", minimalFile("30", "0.1", map[string]string{"beta-2": `{"basis":"per_second","usd":"0.1","cases":[{"when":{"resolution":"1080p"},"usd":"1"}]}`}),
			[]string{`variants.beta-2.cases[0].when.resolution: beta-2 has no field "resolution"`}},
		{"case on unknown value", minimalFile("30", "0.1", map[string]string{"zeta-pro": `{"basis":"per_image","usd":"0.14","cases":[{"when":{"resolution":"8K"},"usd":"1"}]}`}),
			[]string{`variants.zeta-pro.cases[0].when.resolution: "8K" is not one of 1K, 2K, 4K`}},
		{"case on a boolean with a bad value", minimalFile("30", "0.1", map[string]string{"alpha-3.1-fast": `{"basis":"per_second","usd":"0.1","cases":[{"when":{"generate_audio":"yes"},"usd":"1"}]}`}),
			[]string{`when.generate_audio: "yes" is not true or false`}},
		{"case on the prompt", minimalFile("30", "0.1", map[string]string{"zeta": `{"basis":"per_image","usd":"0.1","cases":[{"when":{"prompt":"x"},"usd":"1"}]}`}),
			[]string{"a string field cannot set a price"}},
		{"case without condition", minimalFile("30", "0.1", map[string]string{"zeta": `{"basis":"per_image","usd":"0.1","cases":[{"when":{},"usd":"1"}]}`}),
			[]string{"cases[0].when: must name at least one field"}},
		{"several problems at once", minimalFile("-1", "0.1", map[string]string{"zeta": `{"basis":"per_image","usd":"-1"}`, "theta-4-fast": ""}),
			[]string{"profit_margin_percent: -1 is negative", "no price for theta-4-fast", "variants.zeta.usd: -1 is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(strings.NewReader(tt.file))
			if !errors.Is(err, errInvalidPriceFile) {
				t.Fatalf("Load = %v, want ErrInvalidPriceFile", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestLoadFileAndFromEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(path, []byte(minimalFile("0", "1", nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envPriceFile: path}
	table, err := fromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !table.ProfitMarginPercent().IsZero() || !table.CreditsPerUSD().Equal(decimal.NewFromInt(100)) {
		t.Fatalf("loaded margin %s, credits per USD %s", table.ProfitMarginPercent(), table.CreditsPerUSD())
	}
	if table, err := fromEnv(func(string) string { return "" }); err != nil || table != Default() {
		t.Fatalf("FromEnv without PRICE_FILE = %p, %v; want Default()", table, err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(minimalFile("30", "-2", nil)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(bad)
	if !errors.Is(err, errInvalidPriceFile) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "is negative") {
		t.Fatalf("LoadFile(bad) = %v, want an error naming the file and the problem", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadFile(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestEmbeddedFileHasTheDocumentedDefaults(t *testing.T) {
	table := Default()
	if !table.CreditsPerUSD().Equal(decimal.NewFromInt(100)) || !table.ProfitMarginPercent().Equal(decimal.NewFromInt(30)) {
		t.Fatalf("credits per USD %s, margin %s; want 100 and 30", table.CreditsPerUSD(), table.ProfitMarginPercent())
	}
	if got := table.CreditsFromUSD(decimal.RequireFromString("0.013")); !got.Equal(decimal.RequireFromString("1.69")) {
		t.Fatalf("CreditsFromUSD(0.013) = %s, want 1.69 unrounded", got)
	}
	if got := table.CreditsFromUSD(decimal.RequireFromString("0.0001")); !got.Equal(decimal.RequireFromString("0.013")) {
		t.Fatalf("CreditsFromUSD(0.0001) = %s, want 0.013 (not rounded)", got)
	}
}

func TestPerSecondUSDForAFiveSecondScene(t *testing.T) {
	tests := []struct {
		version string
		want    string
		why     string
	}{
		{"beta-2", "0.10", "its rate; the 4 s clip (0.40) is cheaper than 5 s at the rate"},
		{"beta-2-enchanted", "0.20", "its shortest clip is 10 s at 1.00 USD"},
		{"alpha-3.1-fast", "0.12", "a 6 s clip at 0.10/s (the tie 4/6 goes to the longer clip)"},
		{"gamma-v2.1", "0.05", "its standard rate at exactly 5 s"},
		{"video-01", "0.10", "one 0.50 clip per 5 s"},
		{"delta-1-pro", "0.06", "its rate at exactly 5 s"},
		{"epsilon-02", "0.054", "a 6 s 768p clip at 0.27"},
	}
	for _, tt := range tests {
		got, err := Default().PerSecondUSD(tt.version, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(decimal.RequireFromString(tt.want)) {
			t.Errorf("%s: PerSecondUSD(5) = %s, want %s (%s)", tt.version, got, tt.want, tt.why)
		}
	}
	// A per-second price times the scene length never falls below the clip.
	got, err := Default().PerSecondUSD("video-01", 7)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mul(decimal.NewFromInt(7)).LessThan(decimal.RequireFromString("0.50")) {
		t.Errorf("video-01 PerSecondUSD(7) = %s; × 7 is below the 0.50 clip", got)
	}
	for _, bad := range []struct {
		version string
		seconds int
	}{{"zeta", 5}, {"nope", 5}, {"beta-2", 0}} {
		if _, err := Default().PerSecondUSD(bad.version, bad.seconds); err == nil {
			t.Errorf("PerSecondUSD(%s, %d) succeeded", bad.version, bad.seconds)
		}
	}
}

func TestClipUSD(t *testing.T) {
	tests := []struct {
		version string
		seconds int
		want    string
	}{
		{"beta-2", 12, "1.20"}, {"epsilon-02", 10, "0.45"}, {"video-01", 6, "0.50"}, {"alpha-3.1-fast", 4, "0.40"},
	}
	for _, tt := range tests {
		got, err := Default().ClipUSD(tt.version, tt.seconds)
		if err != nil || !got.Equal(decimal.RequireFromString(tt.want)) {
			t.Errorf("ClipUSD(%s, %d) = %s, %v; want %s", tt.version, tt.seconds, got, err, tt.want)
		}
	}
	if _, err := Default().ClipUSD("beta-2", 5); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("ClipUSD(beta-2, 5) = %v, want ErrInvalid: 5 s is not a beta-2 duration", err)
	}
}

func TestQuoteRejectsAnImpossibleRequest(t *testing.T) {
	v, _ := catalog.LookupVersion("beta-2")
	if _, err := Default().QuoteFor(v, map[string]any{"prompt": "p"}, 1); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("beta-2 without seconds: %v, want ErrInvalid", err)
	}
	img, _ := catalog.LookupVersion("zeta")
	if _, err := Default().QuoteFor(img, map[string]any{"prompt": "p"}, 0); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("zeta with 0 images: %v, want ErrInvalid", err)
	}
}

func TestMarkdownTableListsEveryVariant(t *testing.T) {
	md := markdownTable(Default())
	rows := 0
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| provider-") {
			rows++
		}
	}
	if rows != len(catalog.All()) {
		t.Errorf("%d variant rows, want %d:\n%s", rows, len(catalog.All()), md)
	}
	for _, want := range []string{
		"credits = base USD × (1 + 30 % margin) × 100 credits per USD",
		"| provider-b | beta-2 | video | USD 0.10 per second | 4 s: 52.00<br>8 s: 104.00<br>12 s: 156.00 |",
		"1 image, resolution=4K: 36.40",
		"8 s, resolution=1080p, generate_audio=true: 208.00",
		"USD 0.039 per image",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	// epsilon-02's six cases cover every duration and resolution, so no
	// "otherwise" price that can never apply is printed.
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "epsilon-02") && strings.Contains(line, "otherwise") {
			t.Errorf("epsilon-02 row names an unreachable fallback: %s", line)
		}
	}
}
