package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// A data dir whose stream leases were written before leases had owners
// (each lease its expiry alone) still opens streams: its old leases count
// until they lapse.
func TestStreamLeasesWrittenBeforeOwnersStillCountAndLapse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	at := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO stream_leases (user_id, leases) VALUES ('u1', ?)`,
		`{"5f1c0a":"`+at.Add(11*time.Minute).Format(time.RFC3339Nano)+`"}`); err != nil {
		t.Fatal(err)
	}
	opened := func(stream string, at time.Time) bool {
		t.Helper()
		ok, err := s.OpenStream(ctx, "u1", stream, "owner", 1, at, at.Add(11*time.Minute))
		if err != nil {
			t.Fatalf("OpenStream over a lease written before owners: %v", err)
		}
		return ok
	}
	if opened("generation/g1", at) {
		t.Error("a stream opened at the limit of 1 beside a live lease written before owners")
	}
	if !opened("generation/g1", at.Add(11*time.Minute)) {
		t.Error("the lease written before owners did not lapse at its expiry")
	}
}
