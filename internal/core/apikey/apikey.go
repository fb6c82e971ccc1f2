// Package apikey mints and parses API keys. A key reads
// "mgk_<id>_<secret>": the "mgk_<id>" prefix is recognisable in logs and
// dashboards and identifies the key for revocation; only the SHA-256 of the
// whole key is stored.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	marker    = "mgk_"
	idLen     = 10 // base32 characters
	secretLen = 43 // base64url characters of 32 random bytes
)

var (
	idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	// ErrMalformed is a string that cannot be an API key of this service.
	errMalformed = errors.New("malformed API key")
)

// Key is a freshly minted key. Plain is shown to the user once.
type Key struct {
	Plain  string
	Prefix string
	Hash   string
}

// New mints a key from the system's secure random source.
func New() (Key, error) {
	id := make([]byte, 7)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return Key{}, fmt.Errorf("mint api key id: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("mint api key secret: %w", err)
	}
	prefix := marker + idEncoding.EncodeToString(id)[:idLen]
	plain := prefix + "_" + base64.RawURLEncoding.EncodeToString(secret)
	return Key{Plain: plain, Prefix: prefix, Hash: Hash(plain)}, nil
}

// Hash is the stored form of a key.
func Hash(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}

// Parse checks a presented key's shape and returns its prefix and hash. It
// rejects anything that is not shaped like a key before any lookup is made.
func Parse(plain string) (prefix, hash string, err error) {
	if len(plain) != len(marker)+idLen+1+secretLen || !strings.HasPrefix(plain, marker) {
		return "", "", errMalformed
	}
	prefix, secret := plain[:len(marker)+idLen], plain[len(marker)+idLen:]
	if secret[0] != '_' {
		return "", "", errMalformed
	}
	for _, r := range prefix[len(marker):] {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz234567", r) {
			return "", "", errMalformed
		}
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret[1:]); err != nil {
		return "", "", errMalformed
	}
	return prefix, Hash(plain), nil
}

// ValidPrefix reports whether s is shaped like a key prefix ("mgk_<id>").
func ValidPrefix(s string) bool {
	if len(s) != len(marker)+idLen || !strings.HasPrefix(s, marker) {
		return false
	}
	for _, r := range s[len(marker):] {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz234567", r) {
			return false
		}
	}
	return true
}
