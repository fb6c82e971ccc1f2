package runtime_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
)

// withoutRequestID is a body with its request_id removed, for comparing
// two answers.
func withoutRequestID(t *testing.T, a answer) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("body %s: %v", a.body, err)
	}
	delete(m, "request_id")
	raw, _ := json.Marshal(m)
	return string(raw)
}

// idRoute is a route that takes an id: mine is the owner's id on it, and
// missing an id that names nothing. New routes taking an id (cancel, ...)
// add a line.
type idRoute struct {
	name, method, prefix string
	mine, missing        func(ids ownedIDs) string
}

type ownedIDs struct{ genUUID, genID, videoID string }

var idRoutes = []idRoute{
	{"generation status by UUID", http.MethodGet, "/api/generations/status/",
		func(o ownedIDs) string { return o.genUUID }, func(ownedIDs) string { return uuid.NewString() }},
	{"generation status by integer id", http.MethodGet, "/api/generations/status/",
		func(o ownedIDs) string { return o.genID }, func(ownedIDs) string { return "987654321" }},
	{"long video status", http.MethodGet, "/api/long-story/videos/",
		func(o ownedIDs) string { return o.videoID }, func(ownedIDs) string { return uuid.NewString() }},
	// Cancel takes no identity-provider token (POST): API keys only. The
	// owner's cancel comes last, since it ends the work.
	{"generation cancel", http.MethodPost, "/api/generations/",
		func(o ownedIDs) string { return o.genUUID + "/cancel" }, func(ownedIDs) string { return uuid.NewString() + "/cancel" }},
	{"long video cancel", http.MethodPost, "/api/long-story/videos/",
		func(o ownedIDs) string { return o.videoID + "/cancel" }, func(ownedIDs) string { return uuid.NewString() + "/cancel" }},
}

// TestOthersIDsAnswerLikeMissingOnes asks every route that takes an id for
// another account's work: the answer is the very 404 a missing id gets
// (same status, code and message, so the same code path), with nothing of
// the owner's work in it, by API key and by identity-provider token.
func TestOthersIDsAnswerLikeMissingOnes(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	cfg := storyConfig()
	cfg.JWTIssuer, cfg.JWTAudience, cfg.JWKSURL = is.Issuer, is.Audience, is.JWKSURL()
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	other := newAccount(t, rt, domain.PlanEnterprise, 1000)
	const secret = "owner's secret prompt"
	g := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, gen("theta-4-fast", map[string]any{"prompt": secret}))
	v := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody(secret, "en", false, "auto", []storyScene{{1, secret}}))
	if g.status != http.StatusOK || v.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s / %d %s", g.status, g.body, v.status, v.body)
	}
	ids := ownedIDs{genUUID: g.str("uuid"), genID: strconv.Itoa(int(g.decoded["id"].(float64))), videoID: v.str("id")}
	leaks := []string{secret, owner.UserID, ids.genUUID, ids.videoID, g.str("upstream_id")}
	for _, r := range idRoutes {
		t.Run(r.name, func(t *testing.T) {
			if r.method == http.MethodGet {
				if a := call(t, rt, r.method, r.prefix+r.mine(ids), owner.APIKey, nil); a.status != http.StatusOK {
					t.Fatalf("the owner: HTTP %d %s", a.status, a.body)
				}
			}
			for _, who := range []struct{ name, cred string }{{"API key", other.APIKey}, {"token", is.Token(other.UserID)}} {
				if who.name == "token" && r.method != http.MethodGet {
					continue
				}
				theirs := call(t, rt, r.method, r.prefix+r.mine(ids), who.cred, nil)
				missing := call(t, rt, r.method, r.prefix+r.missing(ids), who.cred, nil)
				checkEnvelope(t, theirs, http.StatusNotFound)
				checkEnvelope(t, missing, http.StatusNotFound)
				if a, b := withoutRequestID(t, theirs), withoutRequestID(t, missing); a != b {
					t.Errorf("%s: another account's id answers %s, a missing id %s", who.name, a, b)
				}
				for _, s := range leaks {
					if s != "" && strings.Contains(string(theirs.body)+strings.Join(headerValues(theirs.header), " "), s) {
						t.Errorf("%s: the 404 leaks %q: %s", who.name, s, theirs.body)
					}
				}
			}
			if r.method != http.MethodGet {
				// The stranger's attempts changed nothing: the owner still can.
				if a := call(t, rt, r.method, r.prefix+r.mine(ids), owner.APIKey, nil); a.status != http.StatusOK && a.status != http.StatusConflict {
					t.Errorf("the owner after the stranger: HTTP %d %s", a.status, a.body)
				}
			}
		})
	}
}

func headerValues(h http.Header) []string {
	var out []string
	for _, vs := range h {
		out = append(out, vs...)
	}
	return out
}

// TestRevokedKeyFailsAtOnce: a key that just worked is refused on its very
// next request, on every route, once revoked; another key of the same
// account goes on working.
func TestRevokedKeyFailsAtOnce(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	svc := &accounts.Service{Store: rt.Store}
	second, err := svc.CreateKey(context.Background(), owner.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if a := call(t, rt, http.MethodGet, "/api/generations/status/1", owner.APIKey, nil); a.status != http.StatusNotFound {
		t.Fatalf("before revoking: HTTP %d %s", a.status, a.body)
	}
	prefix, _, _ := apikey.Parse(owner.APIKey)
	if _, err := svc.RevokeKey(context.Background(), prefix); err != nil {
		t.Fatal(err)
	}
	before := account(t, rt, owner.UserID)
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/api/generations/status/1", nil},
		{http.MethodPost, "/api/generations/generate", gen("zeta", map[string]any{"prompt": "after revocation"})},
		{http.MethodPost, "/api/long-story/videos/estimate", map[string]any{"model": "beta-2", "scene_count": 2}},
		{http.MethodPost, "/api/long-story/videos", storyBody("x", "en", false, "auto", []storyScene{{1, "x"}})},
		{http.MethodGet, "/api/long-story/videos/" + uuid.NewString(), nil},
	} {
		if code := checkEnvelope(t, call(t, rt, r.method, r.path, owner.APIKey, r.body), http.StatusUnauthorized); code != "unauthorized" {
			t.Errorf("%s %s: code %q", r.method, r.path, code)
		}
	}
	unchanged(t, rt, before, 0)
	if a := call(t, rt, http.MethodGet, "/api/generations/status/1", second.APIKey, nil); a.status != http.StatusNotFound {
		t.Errorf("the account's other key: HTTP %d %s", a.status, a.body)
	}
}

// TestRevokedKeyFailsOnceItsCachedAnswerExpires: with the authorizer's
// answers cached (AuthCacheTTL, as AuthorizerCacheTtl in AWS), a key
// revoked after its answer was cached is still let through until that
// answer expires, without invoking the authorizer, and every such request
// is still counted against the rate limit; from then on it is refused.
func TestRevokedKeyFailsOnceItsCachedAnswerExpires(t *testing.T) {
	const ttl = time.Minute
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := runtimeConfig()
	cfg.AuthCacheTTL, cfg.AuthCacheClock = ttl, clock
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanPro, 100)
	authorizerCalls := func() int64 { return rt.Costs.Snapshot().ByFunction["authorizer"] }
	const path = "/api/generations/status/1"

	first := call(t, rt, http.MethodGet, path, owner.APIKey, nil)
	if first.status != http.StatusNotFound || authorizerCalls() != 1 {
		t.Fatalf("before revoking: HTTP %d %s, %d authorizer calls", first.status, first.body, authorizerCalls())
	}
	prefix, _, _ := apikey.Parse(owner.APIKey)
	if _, err := (&accounts.Service{Store: rt.Store}).RevokeKey(context.Background(), prefix); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(ttl - time.Second) // still within the TTL
	mu.Unlock()
	second := call(t, rt, http.MethodGet, path, owner.APIKey, nil)
	// Answered within the TTL: from the cache, so still let through...
	if second.status != http.StatusNotFound || authorizerCalls() != 1 {
		t.Errorf("revoked, within the TTL: HTTP %d %s, %d authorizer calls; want the cached answer (404) and no call", second.status, second.body, authorizerCalls())
	}
	// ...and counted: one more request in the minute (or a new minute).
	r1, _ := strconv.Atoi(first.header.Get("X-RateLimit-Remaining"))
	r2, err := strconv.Atoi(second.header.Get("X-RateLimit-Remaining"))
	if err != nil || second.header.Get("X-RateLimit-Reset") == first.header.Get("X-RateLimit-Reset") && r2 != r1-1 {
		t.Errorf("a request on the cached answer was not counted: remaining %d then %q", r1, second.header.Get("X-RateLimit-Remaining"))
	}
	mu.Lock()
	now = now.Add(2 * time.Second) // past the TTL
	mu.Unlock()
	if code := checkEnvelope(t, call(t, rt, http.MethodGet, path, owner.APIKey, nil), http.StatusUnauthorized); code != "unauthorized" {
		t.Errorf("once the cached answer expired: code %q", code)
	}
	if n := authorizerCalls(); n != 2 {
		t.Errorf("%d authorizer calls, want 2 (the first request and the one after the TTL)", n)
	}
}

// TestACachedTokenAnswerIsRefusedWhereTokensAreNotTaken: the gateway's
// cached answer for a token, given on a status route, reaches a POST route
// too (the cache key is the Authorization header alone); the POST route
// refuses it as it refuses a token it sees afresh.
func TestACachedTokenAnswerIsRefusedWhereTokensAreNotTaken(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	rt := start(t, runtime.Config{JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL(), AuthCacheTTL: time.Minute})
	owner := newAccount(t, rt, domain.PlanPro, 100)
	tok := is.Token(owner.UserID)
	if a := call(t, rt, http.MethodGet, "/api/generations/status/1", tok, nil); a.status != http.StatusNotFound {
		t.Fatalf("the token on the status route: HTTP %d %s", a.status, a.body)
	}
	before := account(t, rt, owner.UserID)
	checkEnvelope(t, call(t, rt, http.MethodPost, "/api/generations/generate", tok,
		malformed(gen("theta-4-fast", map[string]any{"prompt": "x"}))), http.StatusUnauthorized)
	unchanged(t, rt, before, 0)
	if n := rt.Costs.Snapshot().ByFunction["authorizer"]; n != 1 {
		t.Errorf("%d authorizer calls, want 1: the POST was answered from the cache", n)
	}
}

// TestBadTokensAreRefusedOnTheStatusRoutes sends each kind of bad token
// through HTTP to both status routes: 401 in the envelope.
func TestBadTokensAreRefusedOnTheStatusRoutes(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	rt := start(t, runtime.Config{JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL()})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	g := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, gen("theta-4-fast", map[string]any{"prompt": "tokens"}))
	if g.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", g.status, g.body)
	}
	for name, tok := range badTokens(t, is, owner.UserID) {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/api/generations/status/" + g.str("uuid"), "/api/long-story/videos/" + uuid.NewString()} {
				if code := checkEnvelope(t, call(t, rt, http.MethodGet, path, tok, nil), http.StatusUnauthorized); code != "unauthorized" {
					t.Errorf("%s: code %q", path, code)
				}
			}
		})
	}
	// The same owner's good token reads it.
	if a := call(t, rt, http.MethodGet, "/api/generations/status/"+g.str("uuid"), is.Token(owner.UserID), nil); a.status != http.StatusOK {
		t.Errorf("a good token: HTTP %d %s", a.status, a.body)
	}
}

// badTokens are the forgeries and stale tokens the verifier must refuse.
func badTokens(t *testing.T, is *jwttest.Issuer, sub string) map[string]string {
	claims := func(edit func(*jwt.RegisteredClaims)) jwt.RegisteredClaims {
		c := is.Claims(sub)
		edit(&c)
		return c
	}
	none := jwt.NewWithClaims(jwt.SigningMethodNone, is.Claims(sub))
	none.Header["kid"] = "rsa-1"
	noneToken, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	pub := rsaPublicPEM(t, is)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, is.Claims(sub))
	hs.Header["kid"] = "rsa-1"
	hsToken, err := hs.SignedString(pub)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"alg none":                  noneToken,
		"HS256 with the public key": hsToken,
		"expired":                   is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(c.IssuedAt.Add(-2 * 3600e9)) }), "rsa-1"),
		"not yet valid":             is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(c.IssuedAt.Add(3600e9)) }), "rsa-1"),
		"wrong issuer":              is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.Issuer = "https://evil.example/" }), "rsa-1"),
		"wrong audience":            is.SignRS256(claims(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"another-api"} }), "rsa-1"),
		"unknown kid":               is.SignRS256(is.Claims(sub), "rotated-away"),
	}
}

// TestUnknownKidRefreshesTheKeysOnceThenAnswers401: a token under a kid
// the service has not seen makes it fetch the keys once; a flood of them
// fetches nothing more.
func TestUnknownKidRefreshesTheKeysOnceThenAnswers401(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	rt := start(t, runtime.Config{JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL()})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	forged := is.SignRS256(is.Claims(owner.UserID), "rotated-away")
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/generations/status/1", forged, nil), http.StatusUnauthorized)
	if n := is.Fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for one unknown kid, want 1", n)
	}
	for i := 0; i < 5; i++ {
		checkEnvelope(t, call(t, rt, http.MethodGet, "/api/generations/status/1", forged, nil), http.StatusUnauthorized)
	}
	if n := is.Fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches after six unknown kids, want 1", n)
	}
}

// The eight URL input fields, each on a variant that has it, with the
// other fields that variant requires.
var urlFields = []struct {
	field, model, version string
	list                  bool
	extra                 map[string]any
}{
	{"image_urls", "provider-b", "beta-2-enchanted", true, nil},
	{"input_reference", "provider-b", "beta-2", false, map[string]any{"seconds": "4", "aspect_ratio": "landscape"}},
	{"first_frame_image", "provider-d", "video-01", false, nil},
	{"subject_reference", "provider-d", "video-01", false, nil},
	{"start_image", "provider-c", "gamma-v2.1", false, nil},
	{"image", "provider-e", "delta-1-pro", false, nil},
	{"input_image", "provider-f", "eta-context-max", false, nil},
	{"image_input", "provider-a", "zeta", true, nil},
}

func urlBody(f struct {
	field, model, version string
	list                  bool
	extra                 map[string]any
}, value string) map[string]any {
	in := map[string]any{"prompt": "a lighthouse"}
	for k, v := range f.extra {
		in[k] = v
	}
	if f.list {
		in[f.field] = []any{value}
	} else {
		in[f.field] = value
	}
	return map[string]any{"model": f.model, "model_version": f.version, "input": in}
}

const onePixelPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// TestURLInputsTakeOnlyHTTPSAndImageDataURIs: every one of the eight URL
// fields takes an https URL or a data: URI of an image, and refuses any
// other scheme, a non-image data: URI, and hosts on loopback (in
// production), link-local or private networks. Through HTTP the refusals
// answer 400 naming the field and change nothing.
func TestURLInputsTakeOnlyHTTPSAndImageDataURIs(t *testing.T) {
	refused := []string{
		"http://example.com/a.png", "ftp://example.com/a.png", "javascript:alert(1)", "file:///etc/passwd",
		"data:text/html;base64,PGgxPg==", "data:image/svg+xml;base64,PHN2Zz48c2NyaXB0Lz48L3N2Zz4=", "data:image/png;base64,!!!",
		"https://169.254.169.254/latest/meta-data", "https://10.0.0.5/a.png", "https://192.168.1.2/a.png",
		"https://[fe80::1]/a.png", "https://user:pass@example.com/a.png", "//example.com/a.png", "a.png",
		// IPv6 forms carrying a loopback, private or metadata address,
		// and the benchmarking range.
		"https://[64:ff9b::7f00:1]/a.png", "https://[::127.0.0.1]/a.png", "https://[2002:7f00:1::]/a.png",
		"https://[::ffff:169.254.169.254]/a.png", "https://[64:ff9b::a9fe:a9fe]/a.png", "https://198.18.0.1/a.png",
	}
	prodRefused := append([]string{"https://127.0.0.1/a.png", "https://localhost/a.png", "https://[::1]/a.png"}, refused...)
	for _, f := range urlFields {
		t.Run(f.field, func(t *testing.T) {
			for _, ok := range []string{"https://images.example.com/a.png", onePixelPNG} {
				raw, _ := json.Marshal(urlBody(f, ok))
				if _, err := catalog.ParseGenerate(raw, catalog.Options{}); err != nil {
					t.Errorf("%s = %.40s refused: %v", f.field, ok, err)
				}
			}
			for _, bad := range prodRefused {
				raw, _ := json.Marshal(urlBody(f, bad))
				if _, err := catalog.ParseGenerate(raw, catalog.Options{}); err == nil || !strings.Contains(err.Error(), f.field) {
					t.Errorf("%s = %q: %v, want refused naming the field", f.field, bad, err)
				}
			}
		})
	}
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	before := account(t, rt, owner.UserID)
	for _, f := range urlFields {
		for _, bad := range refused {
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, malformed(urlBody(f, bad)))
			if checkEnvelope(t, a, http.StatusBadRequest); !strings.Contains(string(a.body), f.field) {
				t.Errorf("%s = %q: the answer does not name the field: %s", f.field, bad, a.body)
			}
		}
	}
	unchanged(t, rt, before, 0)
}

func rsaPublicPEM(t *testing.T, is *jwttest.Issuer) []byte {
	der, err := x509.MarshalPKIXPublicKey(&is.RSA.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
