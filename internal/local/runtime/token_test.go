package runtime_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
)

func TestStatusAcceptsIdentityProviderTokensOfItsOwner(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	rt := start(t, runtime.Config{JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL()})
	owner := newAccount(t, rt, domain.PlanPro, 100)
	other := newAccount(t, rt, domain.PlanPro, 100)
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, gen("theta-4-fast", map[string]any{"prompt": "token test"}))
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d %s", a.status, a.body)
	}
	path := "/api/generations/status/" + a.str("uuid")
	if b := call(t, rt, http.MethodGet, path, is.Token(owner.UserID), nil); b.status != http.StatusOK || b.str("id") != a.str("uuid") {
		t.Errorf("owner's token: HTTP %d %s", b.status, b.body)
	}
	if b := call(t, rt, http.MethodGet, path, is.SignES256(is.Claims(owner.UserID)), nil); b.status != http.StatusOK {
		t.Errorf("owner's ES256 token: HTTP %d", b.status)
	}
	checkEnvelope(t, call(t, rt, http.MethodGet, path, is.Token(other.UserID), nil), http.StatusNotFound)
	checkEnvelope(t, call(t, rt, http.MethodGet, path, is.Token("usr_nobody"), nil), http.StatusUnauthorized)
	expired := is.Claims(owner.UserID)
	expired.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
	checkEnvelope(t, call(t, rt, http.MethodGet, path, is.SignRS256(expired, "rsa-1"), nil), http.StatusUnauthorized)
	// Tokens are for reading status only.
	checkEnvelope(t, call(t, rt, http.MethodPost, "/api/generations/generate", is.Token(owner.UserID),
		malformed(gen("theta-4-fast", map[string]any{"prompt": "x"}))), http.StatusUnauthorized)
}
