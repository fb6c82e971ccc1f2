package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func testPollChain(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	g := &domain.Generation{UUID: uuid.NewString(), UserID: id, Model: "provider-a", ModelVersion: "zeta",
		Kind: domain.MediaImage, Input: []byte(`{"prompt":"x"}`), ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("1"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(10 * time.Minute)}
	if err := s.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	lease := now.Add(time.Minute)
	claim := func(attempt int, at, until time.Time) (bool, int) {
		t.Helper()
		ok, holder, err := s.ClaimPoll(ctx, g.UUID, attempt, at, until)
		if err != nil {
			t.Fatalf("ClaimPoll(%d): %v", attempt, err)
		}
		return ok, holder
	}

	// Twelve deliveries of attempt 0 at once: exactly one runs.
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _, err := s.ClaimPoll(ctx, g.UUID, 0, now, lease); err != nil {
				t.Errorf("ClaimPoll: %v", err)
			} else if ok {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d concurrent claims of attempt 0 won, want 1", won.Load())
	}
	if ok, holder := claim(0, now.Add(time.Second), lease); ok || holder != 0 {
		t.Errorf("a repeated attempt 0 inside its lease = %v (holder %d), want refused, holder 0", ok, holder)
	}
	// Its claimer died: after the lease, a redelivery takes over.
	if ok, _ := claim(0, lease, lease.Add(time.Minute)); !ok {
		t.Error("a redelivery of attempt 0 after its lease was refused")
	}
	// The next attempt runs at once; older ones are refused for good.
	if ok, _ := claim(1, now, time.Time{}); !ok {
		t.Error("attempt 1 was refused")
	}
	if ok, holder := claim(0, now.Add(time.Hour), now.Add(2*time.Hour)); ok || holder != 1 {
		t.Errorf("attempt 0 after attempt 1 = %v (holder %d), want refused, holder 1", ok, holder)
	}
	// A zero lease hands the chain to the very attempt it names.
	if ok, _ := claim(1, now, lease); !ok {
		t.Error("attempt 1 with a lapsed (zero) lease was refused")
	}
	if _, _, err := s.ClaimPoll(ctx, uuid.NewString(), 0, now, lease); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("ClaimPoll of a missing generation = %v, want ErrNotFound", err)
	}
}
