package longform

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// captionSamples are narration lines in each narration language's script,
// and right-to-left text.
var captionSamples = map[string]string{
	"en": "The sea comes in, and the gulls call.",
	"es": "El mar llega; ¿las gaviotas? Sí, señor.",
	"fr": "La mer monte à l'aube, où les mouettes crient.",
	"de": "Das Meer kommt, die Möwen rufen über der Straße.",
	"it": "Il mare arriva e i gabbiani chiamano là.",
	"pt": "O mar chega, e as gaivotas não param.",
	"nl": "De zee komt, de meeuwen roepen één keer.",
	"pl": "Morze przychodzi, mewy krzyczą nad łodzią.",
	"hi": "समुद्र की लहरें धीरे धीरे किनारे पर आती हैं।",
	"ja": "うみのおとがきこえる。海と空、カモメ。",
	"ar": "البحر عند الفجر، والنوارس تنادي.",
	"he": "הים בשחר, והשחפים קוראים.",
}

// charset reads a font file's coverage with fontconfig's fc-query: the
// code points of its first face.
func charset(t *testing.T, file string) func(rune) bool {
	t.Helper()
	out, err := exec.Command("fc-query", "--index=0", "--format=%{charset}", file).Output()
	if err != nil {
		t.Fatalf("fc-query %s: %v (apt-get install fontconfig)", file, err)
	}
	var ranges [][2]rune
	for _, f := range strings.Fields(string(out)) {
		lo, hi, _ := strings.Cut(f, "-")
		if hi == "" {
			hi = lo
		}
		a, err1 := strconv.ParseInt(lo, 16, 32)
		b, err2 := strconv.ParseInt(hi, 16, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("fc-query charset %q", f)
		}
		ranges = append(ranges, [2]rune{rune(a), rune(b)})
	}
	return func(r rune) bool {
		for _, rg := range ranges {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
}

// Every narration language's captions are burned in a font that has a
// glyph for every character of its script (no tofu), right-to-left text
// too: measured on the installed font files with fontconfig.
func TestEachLanguagesCaptionFontHasItsGlyphs(t *testing.T) {
	for _, lang := range Languages {
		if _, ok := captionSamples[lang.Code]; !ok {
			t.Errorf("no caption sample for %s: add one", lang.Code)
		}
	}
	for code, text := range captionSamples {
		t.Run(code, func(t *testing.T) {
			cues := []cue{{Lines: captionLines(text)}}
			font := captionFontFor(code, cues)
			file, err := findCaptionFont(font, DefaultCaptionFontDirs)
			if err != nil {
				t.Fatalf("%v: scripts/install-deps.sh installs it", err)
			}
			has := charset(t, file)
			for _, r := range text {
				if !unicode.IsSpace(r) && !has(r) {
					t.Errorf("%s (%s) has no glyph for %q (U+%04X)", font.Family, filepath.Base(file), r, r)
				}
			}
		})
	}
}

// frameOf renders a grey 720x1280 frame at 0.5 s through filter and
// answers its raw grey pixels. fontconfig is given no fonts (an empty
// configuration), as in the Lambda function: libass has only the fonts of
// the filter's fontsdir, and draws boxes for what they lack.
func frameOf(t *testing.T, filter string) []byte {
	t.Helper()
	dir := t.TempDir()
	conf, out := filepath.Join(dir, "fonts.conf"), filepath.Join(dir, "frame.gray")
	if err := os.WriteFile(conf, []byte("<?xml version=\"1.0\"?>\n<fontconfig></fontconfig>\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "color=c=gray:s=720x1280:d=1:r=24",
		"-vf", filter+",format=gray", "-ss", "0.5", "-frames:v", "1", "-f", "rawvideo", out)
	cmd.Env = append(os.Environ(), "FONTCONFIG_FILE="+conf, "HOME="+dir, "XDG_CACHE_HOME="+dir)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func differing(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if d := int(a[i]) - int(b[i]); d > 40 || d < -40 {
			n++
		}
	}
	return n
}

// Burned captions are drawn with their script's font and shaped, with no
// font but the one burnCaptions gives libass (as in Lambda): Japanese in
// WenQuanYi differs from the same text in DejaVu Sans, which has no kana
// (boxes); Hindi shaped by HarfBuzz (the filter's complex shaping) differs
// from the same text laid glyph by glyph (simple shaping: Devanagari's
// vowel signs unordered, its conjuncts broken); Arabic's letters are
// joined: the line differs from the same letters kept apart by zero-width
// non-joiners.
func TestBurnedCaptionsUseTheScriptsFontAndShapeIt(t *testing.T) {
	filter := func(lang, text string, font *captionFont, shaping string) string {
		cues := []cue{{Start: 0, End: 1, Lines: captionLines(text)}}
		f := captionFontFor(lang, cues)
		if font != nil {
			f = *font
		}
		file, err := findCaptionFont(f, DefaultCaptionFontDirs)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		fonts := filepath.Join(dir, "fonts")
		if err := os.Mkdir(fonts, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(file, filepath.Join(fonts, f.File)); err != nil {
			t.Fatal(err)
		}
		script := filepath.Join(dir, "c.ass")
		if err := os.WriteFile(script, assScript(cues, f, 720, 1280), 0o600); err != nil {
			t.Fatal(err)
		}
		return strings.Replace(assFilter(script, fonts), ":shaping=complex", ":shaping="+shaping, 1)
	}
	apart := func(s string) string { return strings.Join(strings.Split(s, ""), "\u200c") }
	blank := frameOf(t, "null")
	for _, tc := range []struct {
		lang, against, otherText string
		other                    *captionFont
		otherShaping             string
	}{
		{"ja", "the font without its glyphs", captionSamples["ja"], &fontLatin, "complex"},
		{"hi", "the unshaped text", captionSamples["hi"], nil, "simple"},
		{"ar", "the letters unjoined", apart(captionSamples["ar"]), nil, "complex"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			ours := frameOf(t, filter(tc.lang, captionSamples[tc.lang], nil, "complex"))
			other := frameOf(t, filter(tc.lang, tc.otherText, tc.other, tc.otherShaping))
			drawn, diff := differing(blank, ours), differing(ours, other)
			t.Logf("%s: %d pixels drawn, %d differ from %s", tc.lang, drawn, diff, tc.against)
			if drawn < 1000 {
				t.Errorf("%s captions drew %d pixels, want the text", tc.lang, drawn)
			}
			if diff < 500 {
				t.Errorf("%s captions: %d pixels differ from %s; want another drawing", tc.lang, diff, tc.against)
			}
		})
	}
}
