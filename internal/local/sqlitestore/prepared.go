package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// statements keeps the hot queries prepared. The pure-Go driver parses a
// statement on every unprepared call, which was a sixth of a status
// request's time; since modernc.org/sqlite 1.40 a *sql.Stmt keeps its
// SQLite statement, so it is parsed once per connection it runs on and
// then reused. The queries are built from constant fragments only, so the
// set stays small.
type statements struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStatements(db *sql.DB) *statements { return &statements{db: db, m: map[string]*sql.Stmt{}} }

// get is query prepared on the pool.
func (p *statements) get(ctx context.Context, query string) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.m[query]; ok {
		return st, nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	p.m[query] = st
	return st, nil
}

// query runs query prepared.
func (p *statements) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// exec runs a statement that returns no rows, prepared.
func (p *statements) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := p.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs query prepared; errors come out of Scan, as with
// sql.DB.QueryRowContext.
func (p *statements) queryRow(ctx context.Context, query string, args ...any) rowScanner {
	st, err := p.get(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (p *statements) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, st := range p.m {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

type rowScanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
