package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

func (s *Store) CreateAccount(ctx context.Context, a domain.Account) error {
	return s.insertNew(ctx, "create account "+a.UserID,
		`INSERT INTO accounts (user_id, plan, rate_limit, created_at, output_retention_days) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT(user_id) DO NOTHING`,
		a.UserID, string(a.Plan), a.CustomRateLimit, formatTime(a.CreatedAt), a.OutputRetentionDays)
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
	var row accountRow
	err := s.rs.queryRow(ctx, `SELECT `+accountHeaderColumns+` FROM accounts WHERE user_id = ?`, userID).Scan(row.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Account{}, fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Account{}, fmt.Errorf("read account %s: %w", userID, err)
	}
	return row.account(userID)
}

// accountHeaderColumns are an account's row without its usage.
const accountHeaderColumns = `plan, rate_limit, balance, held, granted, captured, created_at, webhook_secret, output_retention_days`

// accountRow scans accountHeaderColumns.
type accountRow struct {
	plan, created, secret            string
	rateLimit, retention             int
	balance, held, granted, captured int64
}

func (r *accountRow) dest() []any {
	return []any{&r.plan, &r.rateLimit, &r.balance, &r.held, &r.granted, &r.captured, &r.created, &r.secret, &r.retention}
}

func (r *accountRow) account(userID string) (domain.Account, error) {
	a := domain.Account{UserID: userID, Plan: domain.Plan(r.plan), CustomRateLimit: r.rateLimit, WebhookSecret: r.secret,
		OutputRetentionDays: r.retention,
		Balance:             domain.CentsToCredits(r.balance), Held: domain.CentsToCredits(r.held),
		Granted: domain.CentsToCredits(r.granted), Captured: domain.CentsToCredits(r.captured)}
	var err error
	if a.CreatedAt, err = parseTime(r.created); err != nil {
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
