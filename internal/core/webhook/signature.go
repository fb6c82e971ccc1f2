// Package webhook signs, verifies and delivers webhooks in the Standard
// Webhooks form (https://www.standardwebhooks.com): headers webhook-id,
// webhook-timestamp and webhook-signature, the signature being
// "v1," + base64(HMAC-SHA256(secret, id + "." + timestamp + "." + body)).
// The service signs its own webhooks this way, and the upstream provider
// signs its callbacks the same way.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret; the rest is base64 of the key.
const SecretPrefix = "whsec_"

// Tolerance is how far a webhook's timestamp may be from now before it is
// refused as stale (or from the future).
const tolerance = 5 * time.Minute

// Verification errors, for errors.Is.
var (
	errMissingHeaders = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	errStale          = errors.New("webhook: timestamp outside the tolerance")
	errBadSignature   = errors.New("webhook: no signature matches")
	errBadSecret      = errors.New("webhook: secret is not whsec_<base64>")
)

// NewSecret makes a random signing secret.
func NewSecret() string {
	key := make([]byte, 24)
	rand.Read(key) // never fails (crypto/rand panics rather than return an error)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

func secretKey(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) == 0 {
		return nil, errBadSecret
	}
	return key, nil
}

// Sign returns the webhook-signature value of a message.
func sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// SetHeaders signs body and sets the three headers on h.
func SetHeaders(h http.Header, secret, id string, ts time.Time, body []byte) error {
	sig, err := sign(secret, id, ts, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

// Verify checks a received webhook: its timestamp within Tolerance of now,
// and one of the space-separated signatures made with secret. This is what
// a receiver runs; docs/webhooks.md shows it.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return errMissingHeaders
	}
	sec, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not Unix seconds", errStale, tsText)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return errStale
	}
	want, err := sign(secret, id, ts, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errBadSignature
}
