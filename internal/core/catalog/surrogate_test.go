package catalog

import "testing"

func TestLoneSurrogateEscapesAreFound(t *testing.T) {
	for body, want := range map[string]int{
		`{"p":"\ud800"}`:             6,
		`{"p":"\udc00"}`:             6,
		`{"p":"a\ud83d"}`:            7,
		`{"p":"\ud83d\u0041"}`:       6,
		`{"p":"\ud83d\ude00"}`:       -1, // 😀 as a pair
		`{"p":"\\ud800"}`:            -1, // an escaped backslash, then text
		`{"p":"\u00e9\"\\"}`:         -1,
		`{"p":"\ufffd"}`:             -1,
		`{"p":"\ud83d\ude00\ud800"}`: 18,
	} {
		if got := loneSurrogate([]byte(body)); got != want {
			t.Errorf("loneSurrogate(%s) = %d, want %d", body, got, want)
		}
	}
}
