package storetest

import (
	"context"
	"strings"
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
// process died) comes back at its expiry, and accounts count apart. A
// lease is the record a stream follows: a stream that resumes on it takes
// it over (counted once, its expiry renewed), and the stream it was taken
// from no longer holds it and cannot close it.
func testStreams(t *testing.T, s store.Store) {
	ctx := context.Background()
	user, other := "user-"+uuid.NewString(), "user-"+uuid.NewString()
	end := now.Add(11 * time.Minute)
	open := func(userID, stream string, at, expires time.Time) bool {
		t.Helper()
		ok, err := s.OpenStream(ctx, userID, stream, "owner-"+stream, 2, at, expires)
		if err != nil {
			t.Fatalf("OpenStream %s: %v", stream, err)
		}
		return ok
	}
	closeStream := func(stream string) {
		t.Helper()
		if err := s.CloseStream(ctx, user, stream, "owner-"+stream); err != nil {
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
			ok, err := s.OpenStream(ctx, racer, uuid.NewString(), uuid.NewString(), 5, now, end)
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
	testStreamTakeover(t, s)
}

// A stream resumed on the record of a live lease takes it over, even at
// the limit: it counts once, its expiry is the new stream's, the stream it
// was taken from no longer holds it and closing from there leaves it; the
// new owner's close gives it back. Concurrent takeovers of leased records
// (clients resuming at once) never pass the limit either.
func testStreamTakeover(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := "user-" + uuid.NewString()
	end := now.Add(11 * time.Minute)
	open := func(stream, owner string, at, expires time.Time) bool {
		t.Helper()
		ok, err := s.OpenStream(ctx, user, stream, owner, 2, at, expires)
		if err != nil {
			t.Fatalf("OpenStream %s by %s: %v", stream, owner, err)
		}
		return ok
	}
	holds := func(stream, owner string) bool {
		t.Helper()
		ok, err := s.HoldsStream(ctx, user, stream, owner)
		if err != nil {
			t.Fatalf("HoldsStream %s by %s: %v", stream, owner, err)
		}
		return ok
	}
	closeStream := func(stream, owner string) {
		t.Helper()
		if err := s.CloseStream(ctx, user, stream, owner); err != nil {
			t.Fatalf("CloseStream %s by %s: %v", stream, owner, err)
		}
	}
	if !open("generation/g1", "first", now, end) || !open("generation/g2", "other", now, end) {
		t.Fatal("the first two streams of two were refused")
	}
	if holds("generation/g1", "second") || !holds("generation/g1", "first") {
		t.Fatal("the lease is not its opener's alone")
	}
	// At the limit, a resume on g1 takes its lease over.
	renewed := end.Add(5 * time.Minute)
	if !open("generation/g1", "second", now.Add(time.Minute), renewed) {
		t.Fatal("a stream resumed on a leased record was refused at the limit")
	}
	if holds("generation/g1", "first") || !holds("generation/g1", "second") {
		t.Error("after the takeover the lease is not the new stream's alone")
	}
	if open("long_video/v1", "third", now.Add(time.Minute), end) {
		t.Error("a takeover counted twice: another record opened at the limit")
	}
	// The stream it was taken from ends and closes: the lease stays.
	closeStream("generation/g1", "first")
	if !holds("generation/g1", "second") || open("long_video/v1", "third", now.Add(time.Minute), end) {
		t.Error("a close by the stream whose lease was taken over gave the lease back")
	}
	// The takeover renewed the expiry: past the first stream's, the lease
	// still counts; g2's lapsed.
	if !open("long_video/v1", "third", end.Add(time.Second), end.Add(20*time.Minute)) {
		t.Fatal("the lease of a stream never closed did not come back at its expiry")
	}
	if open("long_video/v2", "fourth", end.Add(time.Second), end.Add(20*time.Minute)) || !holds("generation/g1", "second") {
		t.Error("the lease taken over lapsed at the expiry it had before the takeover")
	}
	closeStream("generation/g1", "second")
	if holds("generation/g1", "second") || !open("long_video/v2", "fourth", end.Add(time.Second), end.Add(20*time.Minute)) {
		t.Error("the owner's close did not give its lease back")
	}

	// Concurrent: 3 records leased of a limit of 5; 12 streams at once,
	// each a resume on one of those 3 or a new record: never more than 5.
	racer := "user-" + uuid.NewString()
	leased := []string{"generation/a", "generation/b", "generation/c"}
	for _, r := range leased {
		if ok, err := s.OpenStream(ctx, racer, r, "before", 5, now, end); err != nil || !ok {
			t.Fatalf("OpenStream %s: %v %v", r, ok, err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[string]string{} // record → the owner last opened
	for i := 0; i < 12; i++ {
		record := "generation/new-" + uuid.NewString()
		if i%2 == 0 {
			record = leased[i/2%3]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := uuid.NewString()
			ok, err := s.OpenStream(ctx, racer, record, owner, 5, now, end)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won[record] = owner
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	held := 0
	for _, r := range leased {
		if _, ok := won[r]; !ok {
			t.Errorf("no resume on %s was admitted; a takeover is never refused", r)
		}
	}
	for r := range won {
		if strings.HasPrefix(r, "generation/new-") {
			held++
		}
	}
	if held+len(leased) > 5 {
		t.Errorf("concurrent opens left %d leases with a limit of 5", held+len(leased))
	}
	if held != 2 {
		t.Errorf("with 3 of 5 leased, %d new records opened concurrently; want 2", held)
	}
}
