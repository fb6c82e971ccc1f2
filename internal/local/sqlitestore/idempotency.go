package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func (s *Store) ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	var existing domain.IdempotencyRecord
	claimed := false
	err := s.tx(ctx, "claim idempotency key", func(tx *sql.Tx) error {
		// Expired answers go here, as DynamoDB's TTL removes them there.
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE expires_at < ?`, formatTime(r.CreatedAt)); err != nil {
			return fmt.Errorf("expire idempotency keys: %w", err)
		}
		var created, expires string
		var body []byte
		err := tx.QueryRowContext(ctx, `SELECT fingerprint, status_code, body, created_at, expires_at FROM idempotency
			WHERE user_id = ? AND key = ?`, r.UserID, r.Key).Scan(&existing.Fingerprint, &existing.StatusCode, &body, &created, &expires)
		switch {
		case err == nil:
			exp, perr := parseTime(expires)
			if perr != nil {
				return perr
			}
			if exp.After(r.CreatedAt) {
				existing.UserID, existing.Key, existing.Body, existing.ExpiresAt = r.UserID, r.Key, body, exp
				existing.CreatedAt, perr = parseTime(created)
				return perr
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency (user_id, key, fingerprint, status_code, body, created_at, expires_at)
			VALUES (?, ?, ?, 0, NULL, ?, ?) ON CONFLICT(user_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
			status_code = 0, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
			r.UserID, r.Key, r.Fingerprint, formatTime(r.CreatedAt), formatTime(r.ExpiresAt))
		if err != nil {
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		claimed = true
		return nil
	})
	if err != nil || claimed {
		return domain.IdempotencyRecord{}, claimed, err
	}
	return existing, false, nil
}

func (s *Store) FinishIdempotencyKey(ctx context.Context, userID, key string, status int, body []byte) error {
	if len(body) > domain.MaxIdempotentAnswer {
		return fmt.Errorf("finish idempotency key: %d bytes: %w", len(body), domain.ErrAnswerTooLarge)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE idempotency SET status_code = ?, body = ? WHERE user_id = ? AND key = ? AND status_code = 0`,
		status, body, userID, key)
	if err != nil {
		return fmt.Errorf("finish idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("finish idempotency key: no claim in progress: %w", domain.ErrConflict)
	}
	return nil
}

func (s *Store) ReleaseIdempotencyKey(ctx context.Context, userID, key string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM idempotency WHERE user_id = ? AND key = ? AND status_code = 0`, userID, key); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
