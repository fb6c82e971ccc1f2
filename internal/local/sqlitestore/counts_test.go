package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/storetest"
)

// serverStore opens dir as the server does: counting rate limits in memory.
func serverStore(t *testing.T, dir string) *sqlitestore.Store {
	t.Helper()
	s := open(t, dir)
	if err := s.CountInProcess(); err != nil {
		t.Fatal(err)
	}
	return s
}

func open(t *testing.T, dir string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformanceCountingInProcess(t *testing.T) {
	t.Log("adapter: sqlite, rate limits counted in process")
	storetest.Run(t, serverStore(t, t.TempDir()))
}

// Counting in memory is exact only while nothing else counts on the data
// directory: a second server there is refused, and so is a store counting
// in the database beside a server (or a server beside it). A store that
// counts nothing (the admin command) opens beside the server as before.
func TestOnlyOneStoreCountsInMemoryOnADataDir(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		// first opens the data directory and keeps it open.
		first func(t *testing.T, dir string)
		// second is what then happens beside it.
		second  func(dir string) error
		refused bool
	}{
		{"a second server", func(t *testing.T, dir string) { serverStore(t, dir) },
			func(dir string) error { return open(t, dir).CountInProcess() }, true},
		{"counting in the database beside a server", func(t *testing.T, dir string) { serverStore(t, dir) },
			func(dir string) error { _, err := open(t, dir).CountRequest(ctx, "u1", now); return err }, true},
		{"a server beside a store that counted in the database", func(t *testing.T, dir string) {
			if _, err := open(t, dir).CountRequest(ctx, "u1", now); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) error { return open(t, dir).CountInProcess() }, true},
		{"a server beside the admin command", func(t *testing.T, dir string) { open(t, dir) },
			func(dir string) error { return open(t, dir).CountInProcess() }, false},
		{"an admin command beside a server", func(t *testing.T, dir string) { serverStore(t, dir) },
			func(dir string) error {
				if _, err := open(t, dir).GetAccount(ctx, "nobody"); !errors.Is(err, domain.ErrNotFound) {
					return err
				}
				return nil
			}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.first(t, dir)
			err := tt.second(dir)
			if got := errors.Is(err, sqlitestore.ErrDataDirInUse); got != tt.refused || (!tt.refused && err != nil) {
				t.Fatalf("got %v, want refused %v", err, tt.refused)
			}
		})
	}
}

// A server's counts come from memory, but the database never holds less
// than the count last answered, so a server started after a crash (which
// writes nothing more) never lets a client past its limit; a server closed
// cleanly stores the exact counts, and the next one goes on from them.
func TestCountsInMemoryAreNeverStoredBelowWhatWasAnswered(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 2, 3, 7, 64, 100} {
		dir := t.TempDir()
		s, err := sqlitestore.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CountInProcess(); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= n; i++ {
			if got, err := s.CountRequest(ctx, "u1", now); err != nil || got != i {
				t.Fatalf("request %d counted as %d (%v)", i, got, err)
			}
		}
		// What a restart after a crash here would read.
		if stored := storedCount(t, dir); stored < n {
			t.Errorf("after %d requests the database holds %d: a crash would let %d more through", n, stored, n-stored)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if stored := storedCount(t, dir); stored != n {
			t.Errorf("closed after %d requests, the database holds %d", n, stored)
		}
		next := serverStore(t, dir)
		if got, err := next.CountRequest(ctx, "u1", now.Add(time.Second)); err != nil || got != n+1 {
			t.Errorf("the next server counted %d (%v), want %d", got, err, n+1)
		}
	}
}

func storedCount(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count FROM rate_limits WHERE user_id = 'u1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
