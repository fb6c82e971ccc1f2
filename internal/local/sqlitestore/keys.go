package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func (s *Store) PutAPIKey(ctx context.Context, k domain.APIKey) error {
	limit, err := domain.CreditsToCents(k.DailyCreditLimit)
	if err != nil {
		return fmt.Errorf("store api key %s: %w", k.Prefix, err)
	}
	ancestors, err := encodeAncestors(k.Ancestors)
	if err != nil {
		return fmt.Errorf("store api key %s: %w", k.Prefix, err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO api_keys (key_hash, prefix, user_id, created_at, name, scopes, daily_credit_limit, ancestors)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.Hash, k.Prefix, k.UserID, formatTime(k.CreatedAt), k.Name, domain.JoinScopes(k.Scopes, ","), limit, ancestors)
	if err != nil {
		return fmt.Errorf("store api key %s: %w", k.Prefix, err)
	}
	return nil
}

func (s *Store) GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error) {
	keys, err := s.queryKeys(ctx, `WHERE key_hash = ?`, hash)
	return firstOf(keys, err, "api key")
}

func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error) {
	return s.queryKeys(ctx, `WHERE user_id = ? ORDER BY created_at`, userID)
}

func (s *Store) RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error) {
	var revoked string
	err := s.w.QueryRowContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE prefix = ? RETURNING revoked_at`,
		formatTime(at), prefix).Scan(&revoked)
	// After the write, whatever it answered (it may have committed although
	// it reports an error): every process's cached authentication starts
	// again. A needless bump only empties the caches.
	if berr := s.auth.bump(); berr != nil {
		return time.Time{}, fmt.Errorf("revoke api key %s: the revocation may be committed, but the servers' caches were not told (restart them): %w", prefix, errors.Join(err, berr))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("api key %s: %w", prefix, domain.ErrNotFound)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("revoke api key %s: %w", prefix, err)
	}
	return parseTime(revoked)
}

// TouchAPIKey writes only when the stored last use is stale; either way it
// drops the key from the auth cache, so the next authentication reads the
// stored time again (once) instead of trying to touch it on every request.
func (s *Store) TouchAPIKey(ctx context.Context, hash string, at, staleBefore time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE key_hash = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		formatTime(at), hash, formatTime(staleBefore))
	s.auth.forget(hash)
	if err != nil {
		return fmt.Errorf("note the use of an api key: %w", err)
	}
	return nil
}

func (s *Store) queryKeys(ctx context.Context, where string, args ...any) ([]domain.APIKey, error) {
	return queryRows(ctx, s, "read api keys", `SELECT `+keyColumns+` FROM api_keys `+where, args,
		func(rows *sql.Rows) (domain.APIKey, error) {
			var row keyRow
			if err := rows.Scan(row.dest()...); err != nil {
				return domain.APIKey{}, fmt.Errorf("read api keys: %w", err)
			}
			return row.key()
		})
}

// GetAPIKeyAccount reads a key and its account's header in one statement,
// or from the auth cache when no key was revoked since: authentication's
// whole read, the status path's hot one. A cached account's balances may be
// older than the request; its plan and limit, all authentication uses,
// never change.
func (s *Store) GetAPIKeyAccount(ctx context.Context, hash string) (domain.APIKey, domain.Account, error) {
	epoch := s.auth.currentEpoch()
	if v, ok := s.auth.get(epoch, hash); ok {
		return v.key, v.acct, nil
	}
	key, acct, err := s.readAPIKeyAccount(ctx, hash)
	if err == nil {
		s.auth.put(epoch, hash, keyAccount{key: key, acct: acct})
	}
	return key, acct, err
}

func (s *Store) readAPIKeyAccount(ctx context.Context, hash string) (domain.APIKey, domain.Account, error) {
	var k keyRow
	var a accountRow
	err := s.rs.queryRow(ctx, `SELECT `+qualified("k", keyColumns)+`, `+qualified("a", accountHeaderColumns)+
		` FROM api_keys k JOIN accounts a ON a.user_id = k.user_id WHERE k.key_hash = ?`, hash).
		Scan(append(k.dest(), a.dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.APIKey{}, domain.Account{}, fmt.Errorf("api key: %w", domain.ErrNotFound)
	}
	if err != nil {
		return domain.APIKey{}, domain.Account{}, fmt.Errorf("read api key: %w", err)
	}
	key, err := k.key()
	if err != nil {
		return domain.APIKey{}, domain.Account{}, err
	}
	acct, err := a.account(key.UserID)
	return key, acct, err
}

// qualified is columns (a comma-separated list) of the table aliased as.
func qualified(as, columns string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = as + "." + c
	}
	return strings.Join(cols, ", ")
}

// keyColumns are an API key's row.
const keyColumns = `key_hash, prefix, user_id, created_at, revoked_at, name, scopes, daily_credit_limit, last_used_at, ancestors`

// keyRow scans keyColumns.
type keyRow struct {
	hash, prefix, userID, created string
	revoked                       sql.NullString
	name, scopes                  string
	limit                         int64
	lastUsed                      sql.NullString
	ancestors                     string
}

func (r *keyRow) dest() []any {
	return []any{&r.hash, &r.prefix, &r.userID, &r.created, &r.revoked, &r.name, &r.scopes, &r.limit, &r.lastUsed, &r.ancestors}
}

func (r *keyRow) key() (domain.APIKey, error) {
	k := domain.APIKey{Hash: r.hash, Prefix: r.prefix, UserID: r.userID, Name: r.name,
		DailyCreditLimit: domain.CentsToCredits(r.limit)}
	var stored []domain.Scope
	if r.scopes != "" {
		for _, name := range strings.Split(r.scopes, ",") {
			stored = append(stored, domain.Scope(name))
		}
	}
	k.Scopes = domain.KeyScopes(stored)
	var err error
	if k.Ancestors, err = decodeAncestors(r.ancestors); err != nil {
		return domain.APIKey{}, fmt.Errorf("api key %s: %w", r.prefix, err)
	}
	if k.CreatedAt, err = parseTime(r.created); err != nil {
		return domain.APIKey{}, err
	}
	for _, t := range []struct {
		col sql.NullString
		to  *time.Time
	}{{r.revoked, &k.RevokedAt}, {r.lastUsed, &k.LastUsedAt}} {
		if t.col.Valid {
			if *t.to, err = parseTime(t.col.String); err != nil {
				return domain.APIKey{}, err
			}
		}
	}
	return k, nil
}

// encodeAncestors is a key's ancestors column: "prefix:cents", comma
// separated, nearest first.
func encodeAncestors(ancestors []domain.KeyLimit) (string, error) {
	parts := make([]string, len(ancestors))
	for i, a := range ancestors {
		cents, err := domain.CreditsToCents(a.DailyCreditLimit)
		if err != nil {
			return "", fmt.Errorf("limit of %s: %w", a.Prefix, err)
		}
		parts[i] = a.Prefix + ":" + strconv.FormatInt(cents, 10)
	}
	return strings.Join(parts, ","), nil
}

func decodeAncestors(col string) ([]domain.KeyLimit, error) {
	if col == "" {
		return nil, nil
	}
	var out []domain.KeyLimit
	for _, part := range strings.Split(col, ",") {
		prefix, centsText, ok := strings.Cut(part, ":")
		cents, err := strconv.ParseInt(centsText, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("ancestors %q are not prefix:cents pairs", col)
		}
		out = append(out, domain.KeyLimit{Prefix: prefix, DailyCreditLimit: domain.CentsToCredits(cents)})
	}
	return out, nil
}
