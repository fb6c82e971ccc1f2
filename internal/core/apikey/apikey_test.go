package apikey

import (
	"errors"
	"strings"
	"testing"
)

func TestNewKeyParsesBackToItsPrefixAndHash(t *testing.T) {
	k, err := New()
	if err != nil {
		t.Fatal(err)
	}
	prefix, hash, err := Parse(k.Plain)
	if err != nil {
		t.Fatalf("Parse(%q): %v", k.Plain, err)
	}
	if prefix != k.Prefix || hash != k.Hash {
		t.Fatalf("Parse = %q %q, want %q %q", prefix, hash, k.Prefix, k.Hash)
	}
	if !strings.HasPrefix(k.Plain, k.Prefix+"_") || !ValidPrefix(k.Prefix) {
		t.Fatalf("key %q does not start with its prefix %q", k.Plain, k.Prefix)
	}
	if strings.Contains(k.Hash, k.Plain) || len(k.Hash) != 64 {
		t.Fatalf("hash %q is not a SHA-256 hex digest", k.Hash)
	}
}

func TestNewKeysDiffer(t *testing.T) {
	a, _ := New()
	b, _ := New()
	if a.Plain == b.Plain || a.Prefix == b.Prefix {
		t.Fatal("two minted keys are equal")
	}
}

func TestParseRejectsMalformedKeys(t *testing.T) {
	good, _ := New()
	tests := []struct{ name, key string }{
		{"empty", ""},
		{"other scheme", "sk-" + good.Plain[3:]},
		{"truncated", good.Plain[:len(good.Plain)-1]},
		{"one too long", good.Plain + "a"},
		{"upper case id", "mgk_" + strings.ToUpper(good.Plain[4:14]) + good.Plain[14:]},
		{"missing separator", good.Plain[:14] + "x" + good.Plain[15:]},
		{"bad secret alphabet", good.Plain[:15] + strings.Repeat("!", secretLen)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Parse(tt.key); !errors.Is(err, errMalformed) {
				t.Fatalf("Parse(%q) = %v, want ErrMalformed", tt.key, err)
			}
		})
	}
}
