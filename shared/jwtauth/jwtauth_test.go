package jwtauth_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mediagen-dev/mediagen/shared/jwtauth"
	"github.com/mediagen-dev/mediagen/shared/jwtauth/jwttest"
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
