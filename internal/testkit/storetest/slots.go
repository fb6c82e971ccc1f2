package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
)

func testSlots(t *testing.T, s store.Store) {
	ctx := context.Background()
	provider := "provider-" + uuid.NewString()[:8]
	acquire := func(holder string, at time.Time) bool {
		t.Helper()
		ok, err := s.AcquireSlot(ctx, provider, holder, 2, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	position := func(holder string) int {
		t.Helper()
		n, err := s.SlotQueuePosition(ctx, provider, holder)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if !acquire("a", now) || !acquire("b", now.Add(time.Second)) {
		t.Fatal("the first two holders got no slot")
	}
	if acquire("c", now.Add(2*time.Second)) || acquire("d", now.Add(3*time.Second)) {
		t.Fatal("a third holder got a slot of two")
	}
	if !acquire("b", now.Add(4*time.Second)) {
		t.Error("a holder asking again lost its slot")
	}
	if p := [2]int{position("c"), position("d")}; p != [2]int{1, 2} {
		t.Errorf("queue positions of c, d = %v, want [1 2]", p)
	}
	if err := s.ReleaseSlot(ctx, provider, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseSlot(ctx, provider, "a"); err != nil {
		t.Fatal(err)
	}
	if acquire("e", now.Add(5*time.Second)) {
		t.Error("a newcomer took the free slot while others wait")
	}
	if acquire("d", now.Add(6*time.Second)) {
		t.Error("the second waiter took the slot the first waits for")
	}
	if !acquire("c", now.Add(7*time.Second)) {
		t.Error("the first waiter did not get the free slot")
	}
	if p := [3]int{position("c"), position("d"), position("e")}; p != [3]int{0, 1, 2} {
		t.Errorf("positions of c, d, e = %v, want [0 1 2]", p)
	}
	if n, err := s.SlotsInUse(ctx, provider); err != nil || n != 2 {
		t.Errorf("slots in use = %d, %v; want 2", n, err)
	}
	// A waiter that gives up leaves the list.
	if err := s.ReleaseSlot(ctx, provider, "d"); err != nil {
		t.Fatal(err)
	}
	if position("e") != 1 {
		t.Errorf("e's position after d left = %d, want 1", position("e"))
	}

	// Many instances at once never hand out more than the limit.
	racing := "provider-" + uuid.NewString()[:8]
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.AcquireSlot(ctx, racing, fmt.Sprintf("h%d", i), 3, now)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n, err := s.SlotsInUse(ctx, racing); got != 3 || err != nil || n != 3 {
		t.Errorf("%d of 16 racing holders got a slot, %d in use (%v); want 3", got, n, err)
	}
}

// testSlotsOfGoneWork: a slot whose work ended without releasing it (its
// poll chain lost) is freed once held past store.SlotHoldLimit, and a
// waiter that stopped asking leaves the line after store.SlotWaiterTimeout,
// so neither takes a slot from the cap for good nor blocks the waiters
// behind it; until then both keep their place.
func testSlotsOfGoneWork(t *testing.T, s store.Store) {
	ctx := context.Background()
	acquire := func(provider, holder string, at time.Time) bool {
		t.Helper()
		ok, err := s.AcquireSlot(ctx, provider, holder, 1, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// A holder whose work is gone: its slot comes back after the limit.
	held := "provider-" + uuid.NewString()[:8]
	if !acquire(held, "lost", now) {
		t.Fatal("the first holder got no slot")
	}
	if acquire(held, "next", now.Add(store.SlotHoldLimit-time.Minute)) {
		t.Error("a slot held for less than SlotHoldLimit was taken from its holder")
	}
	if !acquire(held, "next", now.Add(store.SlotHoldLimit+time.Second)) {
		t.Error("a slot held past SlotHoldLimit was not freed for the waiter")
	}
	if n, err := s.SlotsInUse(ctx, held); err != nil || n != 1 {
		t.Errorf("slots in use = %d, %v; want 1 (the new holder's)", n, err)
	}
	if acquire(held, "third", now.Add(store.SlotHoldLimit+2*time.Second)) {
		t.Error("a third holder got the slot the new holder has")
	}

	// A waiter at the head of the line that stopped asking: the waiter
	// behind it, still asking, gets the free slot once the first is gone.
	line := "provider-" + uuid.NewString()[:8]
	if !acquire(line, "holder", now) {
		t.Fatal("the first holder got no slot")
	}
	if acquire(line, "dead", now.Add(time.Second)) || acquire(line, "alive", now.Add(2*time.Second)) {
		t.Fatal("a waiter got the only slot")
	}
	if err := s.ReleaseSlot(ctx, line, "holder"); err != nil {
		t.Fatal(err)
	}
	at := now.Add(2 * time.Second)
	for ; at.Before(now.Add(time.Second + store.SlotWaiterTimeout)); at = at.Add(time.Minute) {
		if acquire(line, "alive", at) {
			t.Fatalf("the second waiter passed the first %s after the first's last ask, within SlotWaiterTimeout", at.Sub(now.Add(time.Second)))
		}
	}
	if !acquire(line, "alive", now.Add(time.Second+store.SlotWaiterTimeout+time.Second)) {
		t.Error("a waiter that stopped asking still blocks the free slot after SlotWaiterTimeout")
	}
	if p, err := s.SlotQueuePosition(ctx, line, "alive"); err != nil || p != 0 {
		t.Errorf("the waiter that got the slot is at position %d (%v), want 0", p, err)
	}
}

// testSweeperFreesSlots: work whose poll chain was lost still holds its
// upstream slot when the sweeper fails it at its deadline; the sweeper
// frees it (a generation's, and a long video's unfinished scenes'), so the
// upstream's cap is whole again.
func testSweeperFreesSlots(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanPro, "100")
	provider := "provider-" + uuid.NewString()[:8]
	old := now.Add(-2 * time.Hour)
	acquire := func(holder string, limit int, at time.Time) bool {
		t.Helper()
		ok, err := s.AcquireSlot(ctx, provider, holder, limit, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	g := &domain.Generation{UUID: uuid.NewString(), UserID: id, Model: "provider-a", ModelVersion: "zeta",
		Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"p"}`), ImageCount: 1,
		Status: domain.StatusProcessing, CreditsUsed: credits("1"), CreatedAt: old, UpdatedAt: old, Deadline: now.Add(-time.Minute)}
	if err := s.Hold(ctx, id, domain.Hold{WorkID: g.UUID, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: old}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	if !acquire(g.UUID, 3, old) {
		t.Fatal("the generation got no slot")
	}
	if err := s.SetUpstreamJobs(ctx, g.UUID, domain.UpstreamRun{Upstream: provider, Model: "m", Jobs: []domain.UpstreamJob{{ID: "j1"}}}, old); err != nil {
		t.Fatal(err)
	}

	v := newLongVideo(t, s, id, "beta-2", old.Add(-time.Hour), domain.Webhook{})
	if err := s.Hold(ctx, id, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: credits("10"), CreatedAt: old}); err != nil {
		t.Fatal(err)
	}
	// Scene 1 runs (its slot held); scene 2 completed and freed its own.
	if !acquire(domain.SceneSlotHolder(v.ID, 1), 3, old) {
		t.Fatal("scene 1 got no slot")
	}
	for n, st := range map[int]domain.Status{1: domain.StatusProcessing, 2: domain.StatusCompleted} {
		if err := s.SetSceneStatus(ctx, v.ID, n, domain.SceneState{Status: st, Upstream: provider, UpstreamJob: domain.UpstreamJob{ID: "s"}}, old); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.SlotsInUse(ctx, provider); err != nil || n != 2 {
		t.Fatalf("slots in use before the sweep = %d, %v; want 2", n, err)
	}

	sw := &sweeper.Sweeper{Store: s, Slots: s, Grace: 10 * time.Minute, Now: func() time.Time { return now }}
	if _, err := sw.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if got, err := s.GetGeneration(ctx, g.UUID); err != nil || got.Status != domain.StatusFailed {
		t.Fatalf("overdue generation = %s, %v; want failed", got.Status, err)
	}
	if got, err := s.GetLongVideo(ctx, v.ID); err != nil || got.Status != domain.StatusFailed {
		t.Fatalf("overdue long video = %s, %v; want failed", got.Status, err)
	}
	if n, err := s.SlotsInUse(ctx, provider); err != nil || n != 0 {
		t.Errorf("slots in use after the sweep = %d, %v; want 0: the ended work's slots were not freed", n, err)
	}
	for i := range 3 {
		if !acquire(fmt.Sprintf("next-%d", i), 3, now) {
			t.Errorf("holder %d of 3 got no slot after the sweep", i+1)
		}
	}
}
