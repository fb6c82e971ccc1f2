// Package jwttest is a test identity provider: it serves a JWKS over HTTP
// and signs tokens with its keys.
package jwttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a running test identity provider.
type Issuer struct {
	Server   *httptest.Server
	Issuer   string
	Audience string
	RSA      *rsa.PrivateKey
	EC       *ecdsa.PrivateKey
	// Fetches counts JWKS downloads.
	Fetches atomic.Int32
}

// New starts an issuer with one RSA key ("rsa-1") and one EC key ("ec-1").
func New() (*Issuer, error) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	is := &Issuer{RSA: rk, EC: ek, Audience: "mediagen-api"}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	jwks := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(pad32(ek.X.Bytes())), "y": b64(pad32(ek.Y.Bytes()))},
	}}
	is.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.Fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(jwks)
	}))
	is.Issuer = is.Server.URL + "/"
	return is, nil
}

// JWKSURL is where the keys are served.
func (is *Issuer) JWKSURL() string { return is.Server.URL + "/.well-known/jwks.json" }

// Close stops the server.
func (is *Issuer) Close() { is.Server.Close() }

// Claims are valid claims for subject, expiring in an hour.
func (is *Issuer) Claims(subject string) jwt.RegisteredClaims {
	now := time.Now()
	return jwt.RegisteredClaims{Issuer: is.Issuer, Audience: jwt.ClaimStrings{is.Audience}, Subject: subject,
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}
}

// SignRS256 signs claims with the RSA key under kid.
func (is *Issuer) SignRS256(c jwt.RegisteredClaims, kid string) string {
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	t.Header["kid"] = kid
	s, err := t.SignedString(is.RSA)
	if err != nil {
		panic(err)
	}
	return s
}

// SignES256 signs claims with the EC key as "ec-1".
func (is *Issuer) SignES256(c jwt.RegisteredClaims) string {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	t.Header["kid"] = "ec-1"
	s, err := t.SignedString(is.EC)
	if err != nil {
		panic(err)
	}
	return s
}

// Token returns a valid RS256 token for subject.
func (is *Issuer) Token(subject string) string { return is.SignRS256(is.Claims(subject), "rsa-1") }

func pad32(b []byte) []byte {
	out := make([]byte, 32)
	copy(out[32-len(b):], b)
	return out
}
