// Package jwtauth verifies identity-provider tokens: RS256 or ES256 JWTs
// from a configured issuer and audience, signed by a key from the issuer's
// JWKS. Keys are cached; an unknown key id triggers at most one refresh per
// MinRefresh interval, so a flood of forged kids cannot hammer the issuer.
package jwtauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrInvalidToken is any token that does not verify.
var ErrInvalidToken = errors.New("invalid token")

// Verifier checks tokens. Configure it once; it is safe for concurrent use.
type Verifier struct {
	Issuer   string
	Audience string
	JWKSURL  string
	HTTP     *http.Client
	// MinRefresh is the least time between two JWKS fetches (default 1 min).
	MinRefresh time.Duration
	// Leeway tolerates clock skew on exp and nbf (default 30 s).
	Leeway time.Duration
	Now    func() time.Time

	mu        sync.Mutex
	keys      map[string]crypto.PublicKey
	fetchedAt time.Time
}

// Verify checks the token and returns its subject.
func (v *Verifier) Verify(ctx context.Context, token string) (string, error) {
	sub, _, err := v.VerifyUntil(ctx, token)
	return sub, err
}

// VerifyUntil is Verify that also says until when the token holds: its
// expiry plus the leeway, the instant from which Verify refuses it. A
// caller that keeps the result (API Gateway's authorizer cache) refuses the
// token from then on without asking again.
func (v *Verifier) VerifyUntil(ctx context.Context, token string) (string, time.Time, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"RS256", "ES256"}),
		jwt.WithIssuer(v.Issuer),
		jwt.WithAudience(v.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(v.leeway()),
	}
	if v.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(v.Now))
	}
	parsed, err := jwt.ParseWithClaims(token, &jwt.RegisteredClaims{}, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("token has no kid")
		}
		return v.key(ctx, kid, t.Method.Alg())
	}, opts...)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	sub, err := parsed.Claims.GetSubject()
	if err != nil || sub == "" {
		return "", time.Time{}, fmt.Errorf("%w: no subject", ErrInvalidToken)
	}
	exp, err := parsed.Claims.GetExpirationTime()
	if err != nil || exp == nil { // WithExpirationRequired makes this unreachable
		return "", time.Time{}, fmt.Errorf("%w: no expiry", ErrInvalidToken)
	}
	return sub, exp.Add(v.leeway()), nil
}

func (v *Verifier) leeway() time.Duration {
	if v.Leeway > 0 {
		return v.Leeway
	}
	return 30 * time.Second
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// key finds the key for kid, refreshing the JWKS once if it is unknown.
func (v *Verifier) key(ctx context.Context, kid, alg string) (crypto.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k, ok := v.keys[kid]
	minRefresh := v.MinRefresh
	if minRefresh == 0 {
		minRefresh = time.Minute
	}
	if !ok && (v.keys == nil || v.now().Sub(v.fetchedAt) >= minRefresh) {
		keys, err := v.fetch(ctx)
		v.fetchedAt = v.now()
		if err != nil {
			return nil, err
		}
		v.keys = keys
		k, ok = keys[kid]
	}
	if !ok {
		return nil, fmt.Errorf("unknown key id %q", kid)
	}
	// The key's type must fit the algorithm: no RSA key for ES256 and so on.
	switch k.(type) {
	case *rsa.PublicKey:
		if alg != "RS256" {
			return nil, fmt.Errorf("key %q is RSA, token says %s", kid, alg)
		}
	case *ecdsa.PublicKey:
		if alg != "ES256" {
			return nil, fmt.Errorf("key %q is EC, token says %s", kid, alg)
		}
	}
	return k, nil
}

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func (v *Verifier) fetch(ctx context.Context) (map[string]crypto.PublicKey, error) {
	client := v.HTTP
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS: HTTP %d", resp.StatusCode)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("decode JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Kid == "" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if pk, err := k.publicKey(); err == nil {
			keys[k.Kid] = pk
		}
	}
	return keys, nil
}

func (k jwk) publicKey() (crypto.PublicKey, error) {
	b := func(s string) (*big.Int, error) {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		return new(big.Int).SetBytes(raw), nil
	}
	switch k.Kty {
	case "RSA":
		n, err := b(k.N)
		if err != nil {
			return nil, err
		}
		e, err := b(k.E)
		if err != nil || !e.IsInt64() {
			return nil, errors.New("bad RSA exponent")
		}
		if n.BitLen() < 2048 {
			return nil, errors.New("RSA key shorter than 2048 bits")
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		if k.Crv != "P-256" {
			return nil, fmt.Errorf("unsupported curve %q", k.Crv)
		}
		x, err := b(k.X)
		if err != nil {
			return nil, err
		}
		y, err := b(k.Y)
		if err != nil {
			return nil, err
		}
		pk := &ecdsa.PublicKey{Curve: elliptic.P256(), X: x, Y: y}
		if _, err := pk.ECDH(); err != nil {
			return nil, fmt.Errorf("EC key: %w", err)
		}
		return pk, nil
	}
	return nil, fmt.Errorf("unsupported key type %q", k.Kty)
}
