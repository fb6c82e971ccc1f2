package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

func (s *Store) CreateAccount(ctx context.Context, a domain.Account) error {
	return s.insertNew(ctx, "create account "+a.UserID,
		`INSERT INTO accounts (user_id, plan, rate_limit, created_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT(user_id) DO NOTHING`,
		a.UserID, string(a.Plan), a.CustomRateLimit, formatTime(a.CreatedAt))
}

func (s *Store) GetAccount(ctx context.Context, userID string) (domain.Account, error) {
	a, err := s.GetAccountHeader(ctx, userID)
	if err != nil {
		return domain.Account{}, err
	}
	if a.Usage, err = s.usage(ctx, userID); err != nil {
		return domain.Account{}, err
	}
	return a, nil
}

// GetAccountHeader reads an account without its monthly usage: one row,
// which is all authentication needs. ErrNotFound if absent.
func (s *Store) GetAccountHeader(ctx context.Context, userID string) (domain.Account, error) {
	a := domain.Account{UserID: userID}
	var plan, created string
	var balance, held, granted, captured int64
	err := s.r.QueryRowContext(ctx,
		`SELECT plan, rate_limit, balance, held, granted, captured, created_at, webhook_secret FROM accounts WHERE user_id = ?`, userID).
		Scan(&plan, &a.CustomRateLimit, &balance, &held, &granted, &captured, &created, &a.WebhookSecret)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Account{}, fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Account{}, fmt.Errorf("read account %s: %w", userID, err)
	}
	a.Plan = domain.Plan(plan)
	a.Balance, a.Held = domain.CentsToCredits(balance), domain.CentsToCredits(held)
	a.Granted, a.Captured = domain.CentsToCredits(granted), domain.CentsToCredits(captured)
	if a.CreatedAt, err = parseTime(created); err != nil {
		return domain.Account{}, err
	}
	return a, nil
}

func (s *Store) usage(ctx context.Context, userID string) (map[string]domain.Usage, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT month, credits, jobs FROM usage WHERE user_id = ?`, userID)
	if err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", userID, err)
	}
	defer rows.Close()
	var out map[string]domain.Usage
	for rows.Next() {
		var month string
		var cents int64
		var jobs int
		if err := rows.Scan(&month, &cents, &jobs); err != nil {
			return nil, fmt.Errorf("read usage of %s: %w", userID, err)
		}
		if out == nil {
			out = map[string]domain.Usage{}
		}
		out[month] = domain.Usage{Credits: domain.CentsToCredits(cents), Jobs: jobs}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", userID, err)
	}
	return out, nil
}
