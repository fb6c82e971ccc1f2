package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// An account's open streams never pass the limit: a stream over it is
// refused and changes nothing, a closed stream's lease comes back at once
// (a repeated close changes nothing), an expired one (a stream whose
// process died) comes back at its expiry, and accounts count apart.
func testStreams(t *testing.T, s store.Store) {
	ctx := context.Background()
	user, other := "user-"+uuid.NewString(), "user-"+uuid.NewString()
	end := now.Add(11 * time.Minute)
	open := func(userID, stream string, at, expires time.Time) bool {
		t.Helper()
		ok, err := s.OpenStream(ctx, userID, stream, 2, at, expires)
		if err != nil {
			t.Fatalf("OpenStream %s: %v", stream, err)
		}
		return ok
	}
	closeStream := func(stream string) {
		t.Helper()
		if err := s.CloseStream(ctx, user, stream); err != nil {
			t.Fatalf("CloseStream %s: %v", stream, err)
		}
	}
	if !open(user, "a", now, end) || !open(user, "b", now.Add(time.Second), end.Add(time.Second)) {
		t.Fatal("the first two streams of two were refused")
	}
	if open(user, "c", now.Add(2*time.Second), end) {
		t.Fatal("a third stream of two was opened")
	}
	if !open(other, "a", now.Add(2*time.Second), end) {
		t.Error("another account's first stream was refused")
	}
	closeStream("a")
	closeStream("a")
	closeStream("never-opened")
	if !open(user, "c", now.Add(3*time.Second), end.Add(3*time.Second)) {
		t.Fatal("a stream was refused after one of two closed")
	}
	if open(user, "d", now.Add(4*time.Second), end) {
		t.Fatal("a stream was opened over the limit after a repeated close")
	}
	// b's lease lapses at its expiry (not before), c's a little later.
	if open(user, "d", end.Add(time.Second-time.Nanosecond), end.Add(20*time.Minute)) {
		t.Error("a stream was opened before any lease expired")
	}
	if !open(user, "d", end.Add(time.Second), end.Add(20*time.Minute)) {
		t.Error("the lease of a stream never closed did not come back at its expiry")
	}
	if open(user, "e", end.Add(2*time.Second), end.Add(20*time.Minute)) {
		t.Error("an expired lease freed two places")
	}
	closeStream("b") // expired already: nothing changes
	if open(user, "e", end.Add(2*time.Second), end.Add(20*time.Minute)) {
		t.Error("closing an expired lease freed a place")
	}

	// Concurrent opens (one per Lambda instance) never pass the limit.
	racer := "user-" + uuid.NewString()
	var opened atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.OpenStream(ctx, racer, uuid.NewString(), 5, now, end)
			if err != nil {
				t.Error(err)
			}
			if ok {
				opened.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := opened.Load(); n != 5 {
		t.Errorf("12 concurrent opens with a limit of 5 opened %d streams, want 5", n)
	}
}
