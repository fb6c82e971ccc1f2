package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

func testAPIKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	suffix := uuid.NewString()[:8]
	k := domain.APIKey{Hash: "hash-" + uuid.NewString(), Prefix: "mgk_" + suffix, UserID: id, CreatedAt: now}
	if err := s.PutAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetAPIKey(ctx, k.Hash)
	if err != nil || got.UserID != id || got.Prefix != k.Prefix || got.Revoked() || !got.CreatedAt.Equal(now) {
		t.Fatalf("GetAPIKey = %+v, %v", got, err)
	}
	if _, err := s.GetAPIKey(ctx, "hash-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetAPIKey(missing) = %v, want ErrNotFound", err)
	}
	k2 := domain.APIKey{Hash: "hash-" + uuid.NewString(), Prefix: "mgk_2" + suffix, UserID: id, CreatedAt: now.Add(time.Second)}
	if err := s.PutAPIKey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	revokedAt := now.Add(time.Minute)
	if err := s.RevokeAPIKey(ctx, k.Prefix, revokedAt); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIKey(ctx, k.Prefix, revokedAt.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetAPIKey(ctx, k.Hash)
	if !got.Revoked() || !got.RevokedAt.Equal(revokedAt) {
		t.Errorf("revoked at %v, want the first revocation %v", got.RevokedAt, revokedAt)
	}
	if got2, _ := s.GetAPIKey(ctx, k2.Hash); got2.Revoked() {
		t.Error("revoking one key revoked another")
	}
	if err := s.RevokeAPIKey(ctx, "mgk_missing", now); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("RevokeAPIKey(missing) = %v, want ErrNotFound", err)
	}
	keys, err := s.ListAPIKeys(ctx, id)
	if err != nil || len(keys) != 2 || keys[0].Prefix != k.Prefix || keys[1].Prefix != k2.Prefix {
		t.Errorf("ListAPIKeys = %+v, %v; want both keys, oldest first", keys, err)
	}
}
