package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/storetest"
)

func TestConformance(t *testing.T) {
	s, err := sqlitestore.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	t.Log("adapter: sqlite (embedded file store)")
	storetest.Run(t, s)
}

// A data directory whose name holds URI syntax opens its own database.
func TestDataDirsWithURISyntaxAreKeptApart(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for _, dir := range []string{"runs#1", "runs#2", "runs?x=1", "runs%23"} {
		s, err := sqlitestore.Open(ctx, root+"/"+dir)
		if err != nil {
			t.Fatalf("open %s: %v", dir, err)
		}
		if _, err := os.Stat(root + "/" + dir + "/" + sqlitestore.FileName); err != nil {
			t.Errorf("the database of %s is not in it: %v", dir, err)
		}
		s.Close()
	}
	if _, err := os.Stat(root + "/runs"); err == nil {
		t.Error("a directory named runs#1 opened a database under runs")
	}
}

// A data directory made when integer ids counted across accounts gets each
// account's generations numbered from 1, in the order they were made, and
// new generations go on from there.
func TestOldDataDirsGetGenerationIDsPerAccount(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `CREATE TABLE generations (
		id INTEGER PRIMARY KEY AUTOINCREMENT, uuid TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
		upstream_id TEXT NOT NULL DEFAULT '', model TEXT NOT NULL, model_version TEXT NOT NULL, kind TEXT NOT NULL,
		input TEXT NOT NULL, image_count INTEGER NOT NULL, output_urls TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL,
		error TEXT NOT NULL DEFAULT '', credits_used INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
		deadline TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const at = "2026-11-21T12:00:00.000000000Z"
	for _, r := range []struct{ uuid, user string }{{"g-a1", "usr_a"}, {"g-b1", "usr_b"}, {"g-a2", "usr_a"}} {
		if _, err := old.ExecContext(ctx, `INSERT INTO generations (uuid, user_id, model, model_version, kind, input,
			image_count, status, credits_used, created_at, updated_at, deadline)
			VALUES (?, ?, 'provider-a', 'zeta', 'image', '{}', 1, 'completed', 507, ?, ?, ?)`, r.uuid, r.user, at, at, at); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tt := range []struct {
		user string
		id   int64
		want string
	}{{"usr_a", 1, "g-a1"}, {"usr_a", 2, "g-a2"}, {"usr_b", 1, "g-b1"}} {
		if g, err := s.GetGenerationByID(ctx, tt.user, tt.id); err != nil || g.UUID != tt.want {
			t.Errorf("GetGenerationByID(%s, %d) = %s, %v; want %s", tt.user, tt.id, g.UUID, err, tt.want)
		}
	}
	next := &domain.Generation{UUID: "g-b2", UserID: "usr_b", Model: "provider-a", ModelVersion: "zeta", Kind: domain.MediaImage,
		Input: []byte(`{}`), ImageCount: 1, Status: domain.StatusProcessing, CreditsUsed: decimal.RequireFromString("5.07")}
	if err := s.CreateGeneration(ctx, next); err != nil || next.ID != 2 {
		t.Errorf("the next generation of usr_b: id %d, %v; want 2", next.ID, err)
	}
}

// The one-statement read of a key and its account answers what the two
// reads it replaces answer: the key (revoked or not) with its account's
// header, and ErrNotFound for an unknown key (a key cannot outlive its
// account: the schema's foreign key).
func TestGetAPIKeyAccountAnswersAsTheTwoReads(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := s.CreateAccount(ctx, domain.Account{UserID: "u1", Plan: domain.PlanEnterprise, CustomRateLimit: 500, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []domain.APIKey{
		{Hash: "h-live", Prefix: "p-live", UserID: "u1", CreatedAt: now},
		{Hash: "h-revoked", Prefix: "p-revoked", UserID: "u1", CreatedAt: now},
	} {
		if err := s.PutAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeAPIKey(ctx, "p-revoked", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		hash    string
		found   bool
		revoked bool
	}{
		{"h-live", true, false},
		{"h-revoked", true, true},
		{"h-unknown", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.hash, func(t *testing.T) {
			k, a, err := s.GetAPIKeyAccount(ctx, tt.hash)
			if !tt.found {
				if !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("err %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantKey, _ := s.GetAPIKey(ctx, tt.hash)
			wantAcct, _ := s.GetAccountHeader(ctx, "u1")
			if k.Revoked() != tt.revoked || !reflect.DeepEqual(k, wantKey) || !reflect.DeepEqual(a, wantAcct) {
				t.Errorf("got %+v %+v, want %+v %+v", k, a, wantKey, wantAcct)
			}
		})
	}
}

// A revocation made by another process on the same data directory (the
// admin command beside the server) reaches the server's cached
// authentication on its next read, as an uncached read would.
func TestARevocationElsewhereReachesTheCachedKeyAtOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	server, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	admin, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := admin.CreateAccount(ctx, domain.Account{UserID: "u1", Plan: domain.PlanPro, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []domain.APIKey{{Hash: "h1", Prefix: "p1", UserID: "u1", CreatedAt: now}, {Hash: "h2", Prefix: "p2", UserID: "u1", CreatedAt: now}} {
		if err := admin.PutAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ { // cached after the first read
		for _, h := range []string{"h1", "h2"} {
			if k, _, err := server.GetAPIKeyAccount(ctx, h); err != nil || k.Revoked() {
				t.Fatalf("read %d of %s: %+v, %v", i, h, k, err)
			}
		}
	}
	if _, err := admin.RevokeAPIKey(ctx, "p1", now); err != nil {
		t.Fatal(err)
	}
	if k, _, err := server.GetAPIKeyAccount(ctx, "h1"); err != nil || !k.Revoked() {
		t.Errorf("after the revocation elsewhere the server read %+v, %v; want it revoked", k, err)
	}
	if k, _, err := server.GetAPIKeyAccount(ctx, "h2"); err != nil || k.Revoked() {
		t.Errorf("the other key reads %+v, %v; want it live", k, err)
	}
}

// The server keeps the epoch file open between reads: each revocation
// elsewhere replaces the file, and the next read sees it, one after
// another; with the file removed nothing is cached, and the bump that
// makes it again is seen too.
func TestEveryEpochBumpReachesTheServersOpenEpochFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	server, admin := open(t, dir), open(t, dir)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := admin.CreateAccount(ctx, domain.Account{UserID: "u1", Plan: domain.PlanPro, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"1", "2", "3", "4"}
	for _, k := range keys {
		if err := admin.PutAPIKey(ctx, domain.APIKey{Hash: "h" + k, Prefix: "p" + k, UserID: "u1", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	revoked := map[string]bool{}
	check := func(step string) {
		t.Helper()
		for range 2 { // the second read may come from the cache
			for _, k := range keys {
				if got, _, err := server.GetAPIKeyAccount(ctx, "h"+k); err != nil || got.Revoked() != revoked[k] {
					t.Fatalf("%s: key %s reads revoked %v (%v), want %v", step, k, got.Revoked(), err, revoked[k])
				}
			}
		}
	}
	check("before")
	for _, tt := range []struct {
		key         string
		removeFirst bool // the epoch file is removed before the revocation
	}{{"1", false}, {"2", false}, {"3", true}, {"4", false}} {
		if tt.removeFirst {
			if err := os.Remove(filepath.Join(dir, "auth-epoch")); err != nil {
				t.Fatal(err)
			}
			check("epoch file removed")
		}
		if _, err := admin.RevokeAPIKey(ctx, "p"+tt.key, now); err != nil {
			t.Fatal(err)
		}
		revoked[tt.key] = true
		check("after revoking " + tt.key)
	}
}

// Reads whose callers give up mid-read (a canceled context, as when a
// Lambda-style task is stopped) must not leave a pooled connection reading
// an old snapshot: a write committed afterwards is seen by every later read.
func TestCanceledReadsLeaveNoStaleSnapshot(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := s.CreateAccount(ctx, domain.Account{UserID: "u1", Plan: domain.PlanPro, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	v := domain.LongVideo{ID: "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43", UserID: "u1", Model: "beta-2", Status: domain.StatusProcessing,
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}}, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := s.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 200; round++ {
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithCancel(ctx)
				go cancel() // at any moment of the read
				s.GetLongVideo(rctx, v.ID)
			}()
		}
		wg.Wait()
	}
	if err := s.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusFailed, Error: "x"}, now); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 32; i++ { // enough to meet every connection of the pool
		var wg sync.WaitGroup
		stale := make(chan domain.Status, 4)
		for j := 0; j < 4; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := s.GetLongVideo(ctx, v.ID)
				if err != nil || got.Status != domain.StatusFailed {
					stale <- got.Status
				}
			}()
		}
		wg.Wait()
		close(stale)
		for st := range stale {
			t.Fatalf("a read after the write saw the video %s (a stale snapshot), want failed", st)
		}
	}
}

// Counting requests whose callers give up mid-write (a client that
// disconnects) must not leave the writer inside an open transaction: the
// counts it made stay visible to, and writable by, another process on the
// data directory.
func TestCanceledCountsLeaveNoOpenWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	server, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 300; i++ {
		cctx, cancel := context.WithCancel(ctx)
		go cancel() // at any moment of the write
		server.CountRequest(cctx, "u1", now)
	}
	n, err := server.CountRequest(ctx, "u1", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	m, err := other.CountRequest(ctx, "u1", now)
	if err != nil || m != n+1 {
		t.Fatalf("another process counted %d (%v) after the server's %d; want %d", m, err, n, n+1)
	}
}

// An account from before the journal gets an opening entry with its totals
// when the store opens, so ledger verify passes on it, and its next
// movement follows that entry.
func TestOldAccountsOpenTheirJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `CREATE TABLE accounts (user_id TEXT PRIMARY KEY, plan TEXT NOT NULL,
		rate_limit INTEGER NOT NULL DEFAULT 0, balance INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
		held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0), granted INTEGER NOT NULL DEFAULT 0,
		captured INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `INSERT INTO accounts (user_id, plan, balance, granted, captured, created_at)
		VALUES ('usr_old', 'pro', 7000, 10000, 3000, '2026-11-01T00:00:00.000000000Z'), ('usr_empty', 'free', 0, 0, 0, '2026-11-01T00:00:00.000000000Z')`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Grant(ctx, "usr_old", "top-up", decimal.RequireFromString("5")); err != nil {
		t.Fatal(err)
	}
	v, err := ledger.Verify(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	if v.Accounts != 2 || v.Entries != 2 || len(v.Discrepancies) != 0 {
		t.Errorf("verify = %+v; want 2 accounts, the opening and the grant entries, no discrepancy", v)
	}
	page, err := s.JournalEntries(ctx, store.JournalQuery{UserID: "usr_old", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[1].Type != domain.EntryOpening || !page.Items[1].After.Balance.Equal(decimal.NewFromInt(70)) ||
		page.Items[0].Seq != 2 || !page.Items[0].After.Balance.Equal(decimal.NewFromInt(75)) {
		t.Errorf("journal = %+v; want the opening (balance 70) then the grant (75)", page.Items)
	}
}

// A data directory made before keys had names, scopes and limits gets the
// columns, and its keys read as they worked then: every scope, no limit.
func TestOldDataDirsKeysKeepEveryScope(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, prefix TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT)`,
		`INSERT INTO api_keys (key_hash, prefix, user_id, created_at) VALUES ('h-old', 'p-old', 'u1', '2026-11-21T12:00:00.000000000Z')`,
	} {
		if _, err := old.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s, err := sqlitestore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, err := s.GetAPIKey(ctx, "h-old")
	if err != nil || !reflect.DeepEqual(k.Scopes, domain.AllScopes) || !k.DailyCreditLimit.IsZero() || k.Name != "" || !k.LastUsedAt.IsZero() {
		t.Errorf("the old key reads %+v, %v; want every scope, no limit, never used", k, err)
	}
}

// The auth cache answers the joined read from memory; a key's use noted
// by TouchAPIKey is read again (once) rather than left stale there, which
// would make every later request try to note it again.
func TestATouchedKeyIsReadAgainThroughTheAuthCache(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := s.CreateAccount(ctx, domain.Account{UserID: "u1", Plan: domain.PlanPro, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAPIKey(ctx, domain.APIKey{Hash: "h1", Prefix: "p1", UserID: "u1", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second read is the cache's
		if k, _, err := s.GetAPIKeyAccount(ctx, "h1"); err != nil || !k.LastUsedAt.IsZero() {
			t.Fatalf("read %d: %+v, %v", i, k, err)
		}
	}
	used := now.Add(time.Minute)
	if err := s.TouchAPIKey(ctx, "h1", used, used.Add(-domain.LastUsedGranularity)); err != nil {
		t.Fatal(err)
	}
	if k, _, err := s.GetAPIKeyAccount(ctx, "h1"); err != nil || !k.LastUsedAt.Equal(used) {
		t.Errorf("after the touch: last used %v, %v; want %v", k.LastUsedAt, err, used)
	}
}

// openStore opens a store on a directory of the test's own, closed at its
// end.
func openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
