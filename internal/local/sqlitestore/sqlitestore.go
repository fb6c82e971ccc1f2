// Package sqlitestore is the embedded adapter of the store: one SQLite file
// under the data directory. It is for the local runtime and the admin
// command, which may open the same file from another process while the
// server runs (WAL journal, busy timeout). Lambda functions never import it.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

var _ store.Store = (*Store)(nil)

// FileName is the database file inside the data directory.
const FileName = "mediagen.db"

// timeLayout sorts lexically in time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Store is the embedded adapter. Writes go through a single connection (SQLite
// has one writer at a time; serialising them in Go avoids busy retries inside
// the process), reads through a small pool.
type Store struct {
	w *sql.DB
	r *sql.DB
	// rs and ws are the hot queries, prepared on r and w.
	rs, ws *statements
	// auth caches authentication's reads across requests.
	auth *authCache
	// purged marks the minute windows whose expired rate-limit counters
	// were deleted.
	purged minuteMark
	// countLock is held shared once this store counts in the database,
	// exclusively when it counts in memory (mem, see CountInProcess).
	countLock *countLock
	mem       *memCounts
}

// Open opens (creating if needed) the database under dir.
func Open(ctx context.Context, dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(15000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	w, err := sql.Open("sqlite", "file:"+uriPath(path)+"?"+q.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	if _, err := w.ExecContext(ctx, schema+pollClaimsSchema); err != nil {
		w.Close()
		return nil, fmt.Errorf("create schema in %s: %w", path, err)
	}
	if err := addColumns(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("upgrade schema in %s: %w", path, err)
	}
	if err := numberGenerations(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("upgrade schema in %s: %w", path, err)
	}
	if err := openJournals(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("upgrade schema in %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", "file:"+uriPath(path)+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	// Keep them all open: opening one (and its pragmas) cost more than a
	// status request's reads when the default two idle ones were exceeded.
	r.SetMaxIdleConns(4)
	s := &Store{w: w, r: r, rs: newStatements(r), ws: newStatements(w), auth: newAuthCache(dir), countLock: newCountLock(dir)}
	if s.auth.currentEpoch() == "" {
		if err := s.auth.bump(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// uriPath escapes what a file: URI would read as syntax ('?' starts the
// query, '#' the fragment, '%' an escape), so a data directory named
// "runs#1" opens its own file rather than "runs".
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// closeTimeout bounds Close's last writes.
const closeTimeout = 10 * time.Second

// Close stores the counts kept in memory and releases the database, then
// the counts lock (after the counts are written, so a server started next
// reads them).
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	flushed := s.flushCounts(ctx)
	return errors.Join(flushed, s.rs.close(), s.ws.close(), s.r.Close(), s.w.Close(), s.countLock.release(), s.auth.file.close())
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

// tx runs fn in one immediate (write-locking) transaction.
func (s *Store) tx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	return nil
}

// updateProcessing changes a record only while it is processing, and says
// whether it was missing (ErrNotFound) or already final (ErrConflict).
func (s *Store) updateProcessing(ctx context.Context, table, keyCol, key, set string, args ...any) error {
	return s.updateIf(ctx, table, keyCol, key, "", set, args...)
}

// updateOutcome is updateProcessing for a record's terminal outcome: a
// cancel is also refused (domain.ErrFinishing) once the record is
// finishing, in the same conditional write.
func (s *Store) updateOutcome(ctx context.Context, table, keyCol, key string, status domain.Status, set string, args ...any) error {
	cond := ""
	if status == domain.StatusCanceled {
		cond = ` AND finishing = 0`
	}
	return s.updateIf(ctx, table, keyCol, key, cond, set, args...)
}

func (s *Store) updateIf(ctx context.Context, table, keyCol, key, cond, set string, args ...any) error {
	args = append(args, key, string(domain.StatusProcessing))
	res, err := s.w.ExecContext(ctx, `UPDATE `+table+` SET `+set+` WHERE `+keyCol+` = ? AND status = ?`+cond, args...)
	if err != nil {
		return fmt.Errorf("update %s %s: %w", table, key, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var status string
	var finishing bool
	err = s.w.QueryRowContext(ctx, `SELECT status, finishing FROM `+table+` WHERE `+keyCol+` = ?`, key).Scan(&status, &finishing)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("update %s %s: %w", table, key, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("update %s %s: %w", table, key, err)
	}
	if domain.Status(status) == domain.StatusProcessing && finishing {
		return fmt.Errorf("update %s %s: its outputs are being written: %w", table, key, domain.ErrFinishing)
	}
	return fmt.Errorf("update %s %s: status is %s: %w", table, key, status, domain.ErrConflict)
}

// unmarshalColumns decodes JSON columns into dsts, leaving empty lists and
// maps nil so that a record reads back as it was written.
func unmarshalColumns(id string, dsts []any, cols ...string) error {
	for i, col := range cols {
		// An empty list, as most of a record's are, is left nil without
		// the decoder (a status read decodes four columns); dsts[i] is a
		// new record's field, so it is nil already.
		if col == "null" || col == "[]" && reflect.ValueOf(dsts[i]).Elem().Kind() == reflect.Slice {
			continue
		}
		if err := json.Unmarshal([]byte(col), dsts[i]); err != nil {
			return fmt.Errorf("read record %s: column %d: %w", id, i, err)
		}
		if v := reflect.ValueOf(dsts[i]).Elem(); (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
		}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
