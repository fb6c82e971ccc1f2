package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func testAPIKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	suffix := uuid.NewString()[:8]
	newKey := func(prefix string, created time.Time) domain.APIKey {
		return domain.APIKey{Hash: "hash-" + uuid.NewString(), Prefix: prefix + suffix, UserID: id, CreatedAt: created}
	}
	// Each key is stored as given and read back: the name, the scopes in
	// the documented order, the limit; a key stored without scopes (made
	// before they existed) reads with every scope.
	tests := []struct {
		name       string
		key        domain.APIKey
		wantScopes []domain.Scope
	}{
		{"no scopes stored: every scope", newKey("mgk_", now), domain.AllScopes},
		{"named, read only, with a limit", func() domain.APIKey {
			k := newKey("mgk_2", now.Add(time.Second))
			k.Name, k.Scopes, k.DailyCreditLimit = "ci – nightly", []domain.Scope{domain.ScopeRead}, decimal.RequireFromString("10.25")
			return k
		}(), []domain.Scope{domain.ScopeRead}},
		{"scopes given out of order read in order", func() domain.APIKey {
			k := newKey("mgk_3", now.Add(2*time.Second))
			k.Name, k.Scopes = "admin", []domain.Scope{domain.ScopeAdmin, domain.ScopeGenerate}
			return k
		}(), []domain.Scope{domain.ScopeGenerate, domain.ScopeAdmin}},
		{"made by another key: its ancestors and their limits", func() domain.APIKey {
			k := newKey("mgk_4", now.Add(3*time.Second))
			k.Name, k.Scopes, k.DailyCreditLimit = "child", []domain.Scope{domain.ScopeGenerate}, decimal.RequireFromString("5")
			k.Ancestors = []domain.KeyLimit{{Prefix: "mgk_parent", DailyCreditLimit: decimal.RequireFromString("7.50")}, {Prefix: "mgk_owner"}}
			return k
		}(), []domain.Scope{domain.ScopeGenerate}},
	}
	for _, tt := range tests {
		if err := s.PutAPIKey(ctx, tt.key); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got, err := s.GetAPIKey(ctx, tt.key.Hash)
		if err != nil || got.UserID != id || got.Prefix != tt.key.Prefix || got.Name != tt.key.Name ||
			!reflect.DeepEqual(got.Scopes, tt.wantScopes) || !got.DailyCreditLimit.Equal(tt.key.DailyCreditLimit) ||
			got.Revoked() || !got.LastUsedAt.IsZero() || !got.CreatedAt.Equal(tt.key.CreatedAt) || !sameAncestors(got.Ancestors, tt.key.Ancestors) {
			t.Errorf("%s: GetAPIKey = %+v, %v; want %+v with scopes %v", tt.name, got, err, tt.key, tt.wantScopes)
		}
	}
	k, k2 := tests[0].key, tests[1].key
	if _, err := s.GetAPIKey(ctx, "hash-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetAPIKey(missing) = %v, want ErrNotFound", err)
	}

	// Last use: written when unset or stale, left alone when recent, and a
	// missing key is neither an error nor created.
	touches := []struct {
		name         string
		at, stale    time.Time
		wantLastUsed time.Time
	}{
		{"first use", now.Add(time.Minute), now.Add(time.Minute - domain.LastUsedGranularity), now.Add(time.Minute)},
		{"within the granularity", now.Add(3 * time.Minute), now.Add(3*time.Minute - domain.LastUsedGranularity), now.Add(time.Minute)},
		{"past it", now.Add(7 * time.Minute), now.Add(7*time.Minute - domain.LastUsedGranularity), now.Add(7 * time.Minute)},
	}
	for _, tt := range touches {
		if err := s.TouchAPIKey(ctx, k2.Hash, tt.at, tt.stale); err != nil {
			t.Fatalf("%s: TouchAPIKey: %v", tt.name, err)
		}
		if got, _ := s.GetAPIKey(ctx, k2.Hash); !got.LastUsedAt.Equal(tt.wantLastUsed) {
			t.Errorf("%s: last used %v, want %v", tt.name, got.LastUsedAt, tt.wantLastUsed)
		}
	}
	if got, _ := s.GetAPIKey(ctx, k.Hash); !got.LastUsedAt.IsZero() {
		t.Errorf("touching one key touched another: %v", got.LastUsedAt)
	}
	if err := s.TouchAPIKey(ctx, "hash-missing", now, now); err != nil {
		t.Errorf("TouchAPIKey(missing) = %v, want nil", err)
	}
	if _, err := s.GetAPIKey(ctx, "hash-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("touching a missing key made it: GetAPIKey = %v", err)
	}

	// Revocation keeps its first time and says so.
	revokedAt := now.Add(time.Minute)
	if at, err := s.RevokeAPIKey(ctx, k.Prefix, revokedAt); err != nil || !at.Equal(revokedAt) {
		t.Fatalf("RevokeAPIKey = %v, %v; want %v", at, err, revokedAt)
	}
	if at, err := s.RevokeAPIKey(ctx, k.Prefix, revokedAt.Add(time.Hour)); err != nil || !at.Equal(revokedAt) {
		t.Errorf("revoking again = %v, %v; want the first revocation %v", at, err, revokedAt)
	}
	got, _ := s.GetAPIKey(ctx, k.Hash)
	if !got.Revoked() || !got.RevokedAt.Equal(revokedAt) {
		t.Errorf("revoked at %v, want the first revocation %v", got.RevokedAt, revokedAt)
	}
	if got2, _ := s.GetAPIKey(ctx, k2.Hash); got2.Revoked() {
		t.Error("revoking one key revoked another")
	}
	if _, err := s.RevokeAPIKey(ctx, "mgk_missing", now); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("RevokeAPIKey(missing) = %v, want ErrNotFound", err)
	}

	keys, err := s.ListAPIKeys(ctx, id)
	if err != nil || len(keys) != len(tests) {
		t.Fatalf("ListAPIKeys = %+v, %v; want the %d keys", keys, err, len(tests))
	}
	for i, tt := range tests {
		want, _ := s.GetAPIKey(ctx, tt.key.Hash)
		if !reflect.DeepEqual(keys[i], want) {
			t.Errorf("ListAPIKeys[%d] = %+v, want %+v (oldest first, as GetAPIKey reads it)", i, keys[i], want)
		}
	}
}

func sameAncestors(a, b []domain.KeyLimit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Prefix != b[i].Prefix || !a[i].DailyCreditLimit.Equal(b[i].DailyCreditLimit) {
			return false
		}
	}
	return true
}
