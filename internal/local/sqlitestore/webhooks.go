package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func (s *Store) EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error) {
	var secret string
	err := s.w.QueryRowContext(ctx, `UPDATE accounts SET webhook_secret = CASE WHEN webhook_secret = '' THEN ? ELSE webhook_secret END
		WHERE user_id = ? RETURNING webhook_secret`, candidate, userID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("webhook secret of %s: %w", userID, err)
	}
	return secret, nil
}

func (s *Store) SetWebhookSecret(ctx context.Context, userID, secret string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE accounts SET webhook_secret = ? WHERE user_id = ?`, secret, userID)
	if err != nil {
		return fmt.Errorf("set webhook secret of %s: %w", userID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	return nil
}

func (s *Store) AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error {
	table, keyCol := "generations", "uuid"
	if kind == domain.WorkLongVideo {
		table, keyCol = "long_videos", "id"
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE `+table+` SET webhook_attempts = json_insert(webhook_attempts, '$[#]', json(?))
		WHERE `+keyCol+` = ? AND json_array_length(webhook_attempts) < ?`, string(b), id, domain.MaxWebhookAttempts)
	if err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var exists bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE `+keyCol+` = ?)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	if exists {
		return fmt.Errorf("record webhook attempt on %s: %w", id, domain.ErrWebhookAttemptsFull)
	}
	return fmt.Errorf("record webhook attempt on %s: %w", id, domain.ErrNotFound)
}
