// Package jwtauth verifies identity-provider tokens: RS256 or ES256 JWTs
// from a configured issuer and audience, signed by a key from the issuer's
// JWKS. Keys are cached; an unknown key id triggers at most one refresh per
// MinRefresh interval, so a flood of forged kids cannot hammer the issuer,
// and a failed fetch is retried only after a backoff that doubles with each
// failure (up to MaxBackoff). One fetch runs at a time, and no lock is held
// across it: tokens with known keys verify meanwhile.
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
	// MaxBackoff caps the wait before another fetch after failed ones
	// (default 5 min); the first wait is a second, doubling per failure.
	MaxBackoff time.Duration
	// Leeway tolerates clock skew on exp and nbf (default 30 s).
	Leeway time.Duration
	Now    func() time.Time

	mu   sync.Mutex
	keys map[string]crypto.PublicKey
	// nextFetch is the earliest a fetch may start: MinRefresh after a
	// success, the backoff after failures (zero: at once).
	nextFetch time.Time
	failures  int
	// fetching is closed when the fetch in flight ends; nil when none runs.
	fetching chan struct{}
}

// firstBackoff is the wait after the first failed fetch.
const firstBackoff = time.Second

// maxKidInError bounds how much of a token's kid an error repeats.
const maxKidInError = 64

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

// key finds the key for kid, refreshing the JWKS once if it is unknown and
// a fetch is due (see nextFetch), or waiting for the fetch in flight.
func (v *Verifier) key(ctx context.Context, kid, alg string) (crypto.PublicKey, error) {
	k, err := v.lookup(ctx, kid)
	if err != nil {
		return nil, err
	}
	// The key's type must fit the algorithm: no RSA key for ES256 and so on.
	switch k.(type) {
	case *rsa.PublicKey:
		if alg != "RS256" {
			return nil, fmt.Errorf("key %q is RSA, token says %s", shortKid(kid), alg)
		}
	case *ecdsa.PublicKey:
		if alg != "ES256" {
			return nil, fmt.Errorf("key %q is EC, token says %s", shortKid(kid), alg)
		}
	}
	return k, nil
}

func (v *Verifier) lookup(ctx context.Context, kid string) (crypto.PublicKey, error) {
	fetched := false
	for {
		v.mu.Lock()
		if k, ok := v.keys[kid]; ok {
			v.mu.Unlock()
			return k, nil
		}
		if wait := v.fetching; wait != nil {
			v.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("wait for the JWKS: %w", ctx.Err())
			}
		}
		if fetched || v.now().Before(v.nextFetch) {
			noKeys := v.keys == nil // read under the lock: a fetch may be setting it
			v.mu.Unlock()
			if noKeys {
				return nil, errors.New("the issuer's keys are unavailable (the last JWKS fetch failed)")
			}
			return nil, fmt.Errorf("unknown key id %q", shortKid(kid))
		}
		done := make(chan struct{})
		v.fetching = done
		v.mu.Unlock()

		// The fetch is the verifier's, not the request's: one caller going
		// away must not count as the issuer failing.
		keys, err := v.fetch(context.WithoutCancel(ctx))
		v.mu.Lock()
		if err != nil {
			v.failures++
			v.nextFetch = v.now().Add(v.backoff())
		} else {
			v.keys, v.failures = keys, 0
			v.nextFetch = v.now().Add(v.minRefresh())
		}
		v.fetching = nil
		close(done)
		v.mu.Unlock()
		if err != nil {
			return nil, err
		}
		fetched = true
	}
}

func (v *Verifier) minRefresh() time.Duration {
	if v.MinRefresh > 0 {
		return v.MinRefresh
	}
	return time.Minute
}

// backoff is the wait after v.failures failed fetches in a row: a second,
// doubling, capped at MaxBackoff (default 5 min).
func (v *Verifier) backoff() time.Duration {
	limit := v.MaxBackoff
	if limit <= 0 {
		limit = 5 * time.Minute
	}
	d := firstBackoff
	for i := 1; i < v.failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// shortKid is a kid as errors and logs repeat it: at most maxKidInError
// bytes, since it is the token's sender's to choose.
func shortKid(kid string) string {
	if len(kid) <= maxKidInError {
		return kid
	}
	return kid[:maxKidInError] + fmt.Sprintf("…(%d bytes)", len(kid))
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
