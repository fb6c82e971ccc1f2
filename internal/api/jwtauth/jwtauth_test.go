package jwtauth_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mediagen-dev/mediagen/internal/api/jwtauth"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
)

func setup(t *testing.T) (*jwttest.Issuer, *jwtauth.Verifier) {
	t.Helper()
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	return is, &jwtauth.Verifier{Issuer: is.Issuer, Audience: is.Audience, JWKSURL: is.JWKSURL(), MinRefresh: time.Hour}
}

func TestValidTokensNameTheirSubject(t *testing.T) {
	is, v := setup(t)
	for name, tok := range map[string]string{
		"RS256": is.Token("usr_1"),
		"ES256": is.SignES256(is.Claims("usr_1")),
	} {
		sub, err := v.Verify(context.Background(), tok)
		if err != nil || sub != "usr_1" {
			t.Errorf("%s: Verify = %q, %v", name, sub, err)
		}
	}
}

// VerifyUntil says when the token stops holding: its expiry plus the
// leeway, the instant from which Verify refuses it.
func TestVerifyUntilIsTheExpiryPlusTheLeeway(t *testing.T) {
	is, v := setup(t)
	v.Leeway = 10 * time.Second
	c := is.Claims("usr_1")
	exp := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	c.ExpiresAt = jwt.NewNumericDate(exp)
	tok := is.SignRS256(c, "rsa-1")
	sub, until, err := v.VerifyUntil(context.Background(), tok)
	if err != nil || sub != "usr_1" || !until.Equal(exp.Add(10*time.Second)) {
		t.Fatalf("VerifyUntil = %q, %v, %v; want usr_1 until %v", sub, until, err, exp.Add(10*time.Second))
	}
	v.Now = func() time.Time { return until.Add(time.Second) }
	if _, err := v.Verify(context.Background(), tok); err == nil {
		t.Errorf("Verify accepts the token after VerifyUntil's instant")
	}
}

func TestInvalidTokensAreRefused(t *testing.T) {
	is, v := setup(t)
	claims := func(edit func(*jwt.RegisteredClaims)) jwt.RegisteredClaims {
		c := is.Claims("usr_1")
		edit(&c)
		return c
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&is.RSA.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, is.Claims("usr_1"))
	hs.Header["kid"] = "rsa-1"
	hsWithPublicKey, _ := hs.SignedString(pubPEM)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, is.Claims("usr_1"))
	none.Header["kid"] = "rsa-1"
	noneToken, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	tampered := is.Token("usr_1")
	tampered = tampered[:len(tampered)-4] + "AAAA"

	tests := map[string]string{
		"alg none":                       noneToken,
		"HS256 with the public key":      hsWithPublicKey,
		"expired":                        is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour)) }), "rsa-1"),
		"no expiry":                      is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.ExpiresAt = nil }), "rsa-1"),
		"not yet valid":                  is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Hour)) }), "rsa-1"),
		"wrong issuer":                   is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.Issuer = "https://evil.example/" }), "rsa-1"),
		"wrong audience":                 is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"other"} }), "rsa-1"),
		"no subject":                     is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.Subject = "" }), "rsa-1"),
		"RSA signature under the EC kid": is.SignRS256(is.Claims("usr_1"), "ec-1"),
		"tampered signature":             tampered,
		"garbage":                        "not.a.jwt",
	}
	for name, tok := range tests {
		t.Run(name, func(t *testing.T) {
			if sub, err := v.Verify(context.Background(), tok); !errors.Is(err, jwtauth.ErrInvalidToken) {
				t.Errorf("Verify = %q, %v; want ErrInvalidToken", sub, err)
			}
		})
	}
}

func TestUnknownKidRefreshesTheKeysOnceThenFails(t *testing.T) {
	is, v := setup(t)
	if _, err := v.Verify(context.Background(), is.Token("usr_1")); err != nil {
		t.Fatal(err)
	}
	if n := is.Fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches after the first token, want 1", n)
	}
	for i := 0; i < 5; i++ {
		if _, err := v.Verify(context.Background(), is.SignRS256(is.Claims("usr_1"), "rotated-away")); !errors.Is(err, jwtauth.ErrInvalidToken) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	// MinRefresh is an hour here, and the first fetch was just now, so the
	// unknown kids cause no further fetch.
	if n := is.Fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches after five unknown kids within MinRefresh, want 1", n)
	}
	v2 := &jwtauth.Verifier{Issuer: is.Issuer, Audience: is.Audience, JWKSURL: is.JWKSURL()}
	v2.MinRefresh = time.Nanosecond
	v2.Verify(context.Background(), is.Token("usr_1"))
	before := is.Fetches.Load()
	v2.Verify(context.Background(), is.SignRS256(is.Claims("usr_1"), "rotated-away"))
	if n := is.Fetches.Load() - before; n != 1 {
		t.Errorf("an unknown kid caused %d refreshes, want exactly 1", n)
	}
}

// jwksFront stands before an issuer's JWKS: it counts fetches, fails them
// while failing is set, and holds each while hold is set (saying so on
// held) until release.
type jwksFront struct {
	srv     *httptest.Server
	fetches atomic.Int32
	failing atomic.Bool
	hold    atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func newJWKSFront(t *testing.T, is *jwttest.Issuer) *jwksFront {
	f := &jwksFront{held: make(chan struct{}, 1), release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.fetches.Add(1)
		if f.hold.Load() {
			f.held <- struct{}{}
			<-f.release
		}
		if f.failing.Load() {
			http.Error(w, "issuer down", http.StatusInternalServerError)
			return
		}
		resp, err := http.Get(is.JWKSURL())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// TestAFailedJWKSFetchBacksOff: while the issuer fails, a flood of tokens
// makes one fetch; the next comes only after a backoff that doubles with
// each failure up to MaxBackoff (on a moved clock), and once the issuer is
// back the keys are fetched and tokens verify.
func TestAFailedJWKSFetchBacksOff(t *testing.T) {
	is, _ := setup(t)
	front := newJWKSFront(t, is)
	front.failing.Store(true)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	v := &jwtauth.Verifier{Issuer: is.Issuer, Audience: is.Audience, JWKSURL: front.srv.URL, MinRefresh: time.Hour,
		MaxBackoff: 8 * time.Second, Now: func() time.Time { return time.Unix(0, clock.Load()) }}
	token := is.Token("usr_1")
	verifyAll := func(n int) {
		t.Helper()
		for range n {
			if _, err := v.Verify(context.Background(), token); !errors.Is(err, jwtauth.ErrInvalidToken) {
				t.Fatalf("Verify while the issuer fails = %v, want ErrInvalidToken", err)
			}
		}
	}
	verifyAll(20)
	if n := front.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for 20 tokens while the issuer fails, want 1", n)
	}
	// Each wait: just short of it fetches nothing, reaching it fetches once.
	want := int32(1)
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		advance(wait - time.Millisecond)
		verifyAll(5)
		if n := front.fetches.Load(); n != want {
			t.Fatalf("%d fetches %v into a %v backoff, want %d", n, wait-time.Millisecond, wait, want)
		}
		advance(time.Millisecond)
		verifyAll(5)
		if want++; front.fetches.Load() != want {
			t.Fatalf("%d fetches once the %v backoff passed, want %d", front.fetches.Load(), wait, want)
		}
	}
	front.failing.Store(false)
	advance(8 * time.Second)
	if sub, err := v.Verify(context.Background(), token); err != nil || sub != "usr_1" {
		t.Fatalf("Verify once the issuer is back = %q, %v", sub, err)
	}
}

// TestAJWKSFetchBlocksNoTokenWithAKnownKey: while an unknown kid's fetch
// hangs at the issuer, tokens whose key is known verify at once (no lock
// is held across the fetch); unknown kids are refused once it ends.
func TestAJWKSFetchBlocksNoTokenWithAKnownKey(t *testing.T) {
	is, _ := setup(t)
	front := newJWKSFront(t, is)
	v := &jwtauth.Verifier{Issuer: is.Issuer, Audience: is.Audience, JWKSURL: front.srv.URL, MinRefresh: time.Nanosecond}
	if _, err := v.Verify(context.Background(), is.Token("usr_1")); err != nil {
		t.Fatal(err)
	}
	front.hold.Store(true)
	unknown := make(chan error, 2)
	go func() {
		_, err := v.Verify(context.Background(), is.SignRS256(is.Claims("usr_1"), "rotated-away"))
		unknown <- err
	}()
	<-front.held // the refresh is at the issuer, held
	known := make(chan error, 1)
	go func() {
		_, err := v.Verify(context.Background(), is.Token("usr_2"))
		known <- err
	}()
	select {
	case err := <-known:
		if err != nil {
			t.Errorf("a token with a known key during a fetch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a token with a known key waited for the JWKS fetch of another")
	}
	go func() {
		_, err := v.Verify(context.Background(), is.SignRS256(is.Claims("usr_1"), "also-unknown"))
		unknown <- err
	}()
	front.hold.Store(false)
	close(front.release)
	for range 2 {
		if err := <-unknown; !errors.Is(err, jwtauth.ErrInvalidToken) {
			t.Errorf("an unknown kid: %v, want ErrInvalidToken", err)
		}
	}
	if n := front.fetches.Load(); n > 3 {
		t.Errorf("%d fetches, want at most 3 (the first, the held one, and one more for the second kid)", n)
	}
}
