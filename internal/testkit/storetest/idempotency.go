package storetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func testIdempotency(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	rec := func(key, fp string, at time.Time) domain.IdempotencyRecord {
		return domain.IdempotencyRecord{UserID: user, Key: key, Fingerprint: fp, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}
	if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec("k1", "fp1", now)); err != nil || !claimed {
		t.Fatalf("first claim = %v, %v", claimed, err)
	}
	existing, claimed, err := s.ClaimIdempotencyKey(ctx, rec("k1", "fp2", now.Add(time.Second)))
	if err != nil || claimed || existing.Fingerprint != "fp1" || existing.StatusCode != 0 {
		t.Fatalf("claim while in progress = %+v, %v, %v; want the first, in progress", existing, claimed, err)
	}
	if err := s.FinishIdempotencyKey(ctx, user, "k1", 200, []byte(`{"id":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishIdempotencyKey(ctx, user, "k1", 500, []byte(`x`)); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second finish = %v, want ErrConflict", err)
	}
	if err := s.ReleaseIdempotencyKey(ctx, user, "k1"); err != nil {
		t.Fatal(err)
	}
	existing, claimed, err = s.ClaimIdempotencyKey(ctx, rec("k1", "fp1", now.Add(time.Hour)))
	if err != nil || claimed || existing.StatusCode != 200 || string(existing.Body) != `{"id":1}` {
		t.Fatalf("claim after finish = %+v, %v, %v; want the stored answer (release must not drop a finished key)", existing, claimed, err)
	}
	if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec("k1", "fp9", now.Add(25*time.Hour))); err != nil || !claimed {
		t.Errorf("claim after expiry = %v, %v; want a new claim", claimed, err)
	}
	// Another account's key of the same name is its own.
	otherUser := newAccount(t, s, domain.PlanFree, "0")
	if _, claimed, err := s.ClaimIdempotencyKey(ctx, domain.IdempotencyRecord{UserID: otherUser, Key: "k1", Fingerprint: "fp1",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil || !claimed {
		t.Errorf("other account's claim = %v, %v; want claimed", claimed, err)
	}
	// A released claim may be taken again.
	if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec("k2", "fp", now)); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if err := s.ReleaseIdempotencyKey(ctx, user, "k2"); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := s.ClaimIdempotencyKey(ctx, rec("k2", "fp", now)); err != nil || !claimed {
		t.Errorf("claim after release = %v, %v; want claimed", claimed, err)
	}
	// Concurrent claims: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, claimed, err := s.ClaimIdempotencyKey(ctx, rec("k3", "fp", now))
			if err != nil && !errors.Is(err, domain.ErrConflict) {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if claimed {
				wins++
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d concurrent claims won, want 1", wins)
	}
}

// testIdempotencyBound: an answer over domain.MaxIdempotentAnswer is
// refused and nothing of it is kept; one at the bound is kept whole.
func testIdempotencyBound(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	claim := func(key string, at time.Time) (domain.IdempotencyRecord, bool) {
		t.Helper()
		existing, claimed, err := s.ClaimIdempotencyKey(ctx, domain.IdempotencyRecord{UserID: user, Key: key, Fingerprint: "fp",
			CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)})
		if err != nil {
			t.Fatalf("claim %s: %v", key, err)
		}
		return existing, claimed
	}
	if _, claimed := claim("big", now); !claimed {
		t.Fatal("first claim not claimed")
	}
	huge := bytes.Repeat([]byte("x"), 5_200_000)
	if err := s.FinishIdempotencyKey(ctx, user, "big", 400, huge); !errors.Is(err, domain.ErrAnswerTooLarge) {
		t.Errorf("finish with a %d-byte answer = %v, want ErrAnswerTooLarge", len(huge), err)
	}
	if err := s.FinishIdempotencyKey(ctx, user, "big", 400, huge[:domain.MaxIdempotentAnswer+1]); !errors.Is(err, domain.ErrAnswerTooLarge) {
		t.Errorf("finish one byte over the bound = %v, want ErrAnswerTooLarge", err)
	}
	if existing, claimed := claim("big", now.Add(time.Second)); claimed || existing.StatusCode != 0 || len(existing.Body) != 0 {
		t.Errorf("after a refused finish: claimed %v, status %d, %d bytes kept; want the claim still in progress, nothing kept",
			claimed, existing.StatusCode, len(existing.Body))
	}
	atBound := huge[:domain.MaxIdempotentAnswer]
	if err := s.FinishIdempotencyKey(ctx, user, "big", 200, atBound); err != nil {
		t.Fatalf("finish at the bound: %v", err)
	}
	if existing, _ := claim("big", now.Add(2*time.Second)); existing.StatusCode != 200 || !bytes.Equal(existing.Body, atBound) {
		t.Errorf("kept status %d, %d bytes; want 200 and the %d bytes", existing.StatusCode, len(existing.Body), len(atBound))
	}
}
