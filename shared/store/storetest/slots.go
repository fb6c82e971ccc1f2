package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/store"
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
