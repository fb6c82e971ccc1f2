package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

func (s *Store) PutAPIKey(ctx context.Context, k domain.APIKey) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO api_keys (key_hash, prefix, user_id, created_at) VALUES (?, ?, ?, ?)`,
		k.Hash, k.Prefix, k.UserID, formatTime(k.CreatedAt))
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

func (s *Store) RevokeAPIKey(ctx context.Context, prefix string, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE prefix = ?`,
		formatTime(at), prefix)
	if err != nil {
		return fmt.Errorf("revoke api key %s: %w", prefix, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("api key %s: %w", prefix, domain.ErrNotFound)
	}
	return nil
}

func (s *Store) queryKeys(ctx context.Context, where string, args ...any) ([]domain.APIKey, error) {
	return queryRows(ctx, s, "read api keys", `SELECT key_hash, prefix, user_id, created_at, revoked_at FROM api_keys `+where, args,
		func(rows *sql.Rows) (domain.APIKey, error) {
			var k domain.APIKey
			var created string
			var revoked sql.NullString
			err := rows.Scan(&k.Hash, &k.Prefix, &k.UserID, &created, &revoked)
			if err != nil {
				return domain.APIKey{}, fmt.Errorf("read api keys: %w", err)
			}
			if k.CreatedAt, err = parseTime(created); err != nil {
				return domain.APIKey{}, err
			}
			if revoked.Valid {
				if k.RevokedAt, err = parseTime(revoked.String); err != nil {
					return domain.APIKey{}, err
				}
			}
			return k, nil
		})
}
