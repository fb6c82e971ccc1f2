package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipKeepsShortTextAndCutsLongTextWithAnEllipsis(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"at the bound", strings.Repeat("a", MaxEchoRunes), strings.Repeat("a", MaxEchoRunes)},
		{"one over", strings.Repeat("a", MaxEchoRunes+1), strings.Repeat("a", MaxEchoRunes) + "…"},
		{"runes, not bytes", strings.Repeat("é", MaxEchoRunes), strings.Repeat("é", MaxEchoRunes)},
		{"multibyte cut on a rune", strings.Repeat("日", 5000), strings.Repeat("日", MaxEchoRunes) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clip(tt.in)
			if got != tt.want || !utf8.ValidString(got) {
				t.Errorf("Clip = %q (%d runes), want %q", got, utf8.RuneCountInString(got), tt.want)
			}
		})
	}
}

// TestUnknownFieldsAreClippedAndCounted: a body whose unknown field names
// are megabytes long, or number in the thousands, is answered with a
// handful of short details, not an echo of itself.
func TestUnknownFieldsAreClippedAndCounted(t *testing.T) {
	huge := strings.Repeat("x", 5_200_000)
	many := map[string]any{"model": "provider-a", "model_version": "zeta", "input": map[string]any{"prompt": "p"}}
	for i := 0; i < 5000; i++ {
		many[fmt.Sprintf("junk%05d", i)] = 1
	}
	tests := []struct {
		name        string
		body        any
		wantFields  []string // present in details, in order of appearance
		wantMessage string   // one detail's message contains it
	}{
		{"a 5.2 MB name at the top", map[string]any{huge: 1, "model": "provider-a", "model_version": "zeta", "input": map[string]any{"prompt": "p"}},
			[]string{strings.Repeat("x", MaxEchoRunes) + "…"}, "unknown field"},
		{"a 5.2 MB name in input", map[string]any{"model": "provider-a", "model_version": "zeta", "input": map[string]any{"prompt": "p", huge: 1}},
			[]string{"input." + strings.Repeat("x", MaxEchoRunes) + "…"}, "unknown field"},
		{"5000 unknown names", many, []string{"body", "junk00000", "junk00009"}, "and 4990 more unknown fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseGenerate(raw, Options{})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("ParseGenerate = %v, want a *ValidationError", err)
			}
			answer, _ := json.Marshal(ve.Details)
			if len(answer) > 4096 || len(ve.Error()) > 4096 {
				t.Errorf("details are %d bytes (message %d) for a %d-byte body, want under 4 KB", len(answer), len(ve.Error()), len(raw))
			}
			if len(ve.Details) > maxUnknownListed+1 {
				t.Errorf("%d details, want at most %d", len(ve.Details), maxUnknownListed+1)
			}
			for _, f := range tt.wantFields {
				if !hasField(ve.Details, f) {
					t.Errorf("details %s lack field %q", answer, f)
				}
			}
			if !strings.Contains(string(answer), tt.wantMessage) {
				t.Errorf("details %s lack %q", answer, tt.wantMessage)
			}
		})
	}
}

// TestErrListsAtMostMaxDetails: however many fields are bad, the error
// lists maxDetails of them and counts the rest.
func TestErrListsAtMostMaxDetails(t *testing.T) {
	var p Problems
	for i := 0; i < 10_000; i++ {
		p.Add(fmt.Sprintf("scopes[%d]", i), "must be one of read, generate, admin")
	}
	var ve *ValidationError
	if !errors.As(p.Err(), &ve) {
		t.Fatal("Err is not a *ValidationError")
	}
	if len(ve.Details) != maxDetails+1 {
		t.Fatalf("%d details, want %d and one that counts the rest", len(ve.Details), maxDetails+1)
	}
	if last := ve.Details[maxDetails]; last.Field != "body" || last.Message != fmt.Sprintf("and %d more problems not listed", 10_000-maxDetails) {
		t.Errorf("last detail = %+v, want the count of the others", last)
	}
}

func hasField(details []FieldError, field string) bool {
	for _, d := range details {
		if d.Field == field {
			return true
		}
	}
	return false
}
