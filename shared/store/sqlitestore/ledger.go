package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

func (s *Store) Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (bool, error) {
	cents, err := domain.CreditsToCents(amount)
	if err != nil {
		return false, fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
	}
	applied := false
	err = s.tx(ctx, "grant "+grantID, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`UPDATE accounts SET balance = balance + ?, granted = granted + ? WHERE user_id = ?
			 AND NOT EXISTS (SELECT 1 FROM grants WHERE user_id = ? AND grant_id = ?)`, cents, cents, userID, userID, grantID)
		if err != nil {
			return fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return s.explainNoAccount(ctx, tx, userID)
		}
		applied = true
		_, err = tx.ExecContext(ctx, `INSERT INTO grants (user_id, grant_id, amount, created_at) VALUES (?, ?, ?, ?)`,
			userID, grantID, cents, formatTime(time.Now()))
		if err != nil {
			return fmt.Errorf("record grant %s: %w", grantID, err)
		}
		return nil
	})
	return applied, err
}

// explainNoAccount turns "no row changed" into ErrNotFound when the account
// is missing, and into nil (an idempotent repeat) when it exists.
func (s *Store) explainNoAccount(ctx context.Context, tx *sql.Tx, userID string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM accounts WHERE user_id = ?`, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read account %s: %w", userID, err)
	}
	return nil
}

func (s *Store) Hold(ctx context.Context, userID string, h domain.Hold) error {
	cents, err := domain.CreditsToCents(h.Amount)
	if err != nil {
		return fmt.Errorf("hold %s: %w", h.WorkID, err)
	}
	return s.tx(ctx, "hold "+h.WorkID, func(tx *sql.Tx) error {
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM holds WHERE work_id = ?`, h.WorkID).Scan(&owner)
		switch {
		case err == nil && owner == userID:
			return nil // already held: idempotent
		case err == nil:
			return fmt.Errorf("hold %s: %w: held by another account", h.WorkID, domain.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		var balance int64
		err = tx.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE user_id = ?`, userID).Scan(&balance)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("hold %s: account %s: %w", h.WorkID, userID, domain.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		if balance < cents {
			return fmt.Errorf("hold %s: %w", h.WorkID, &domain.InsufficientCreditsError{
				Required: h.Amount, Available: domain.CentsToCredits(balance)})
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - ?, held = held + ? WHERE user_id = ?`,
			cents, cents, userID); err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO holds (work_id, user_id, kind, amount, created_at) VALUES (?, ?, ?, ?, ?)`,
			h.WorkID, userID, string(h.Kind), cents, formatTime(h.CreatedAt)); err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		return nil
	})
}

func (s *Store) Capture(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, true)
}

// captureUsage adds a captured hold to the account's usage of this month.
const captureUsage = `INSERT INTO usage (user_id, month, credits, jobs) VALUES (?, ?, ?, 1)
	ON CONFLICT(user_id, month) DO UPDATE SET credits = credits + excluded.credits, jobs = jobs + 1`

func (s *Store) Release(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, false)
}

func (s *Store) settle(ctx context.Context, userID, workID string, capture bool) (bool, error) {
	move := `UPDATE accounts SET held = held - ?, balance = balance + ? WHERE user_id = ?`
	if capture {
		move = `UPDATE accounts SET held = held - ?, captured = captured + ? WHERE user_id = ?`
	}
	settled := false
	err := s.tx(ctx, "settle "+workID, func(tx *sql.Tx) error {
		var cents int64
		err := tx.QueryRowContext(ctx, `DELETE FROM holds WHERE work_id = ? AND user_id = ? RETURNING amount`, workID, userID).Scan(&cents)
		if errors.Is(err, sql.ErrNoRows) {
			// Not open: already settled or never held, unless the account is missing.
			return s.explainNoAccount(ctx, tx, userID)
		}
		if err != nil {
			return fmt.Errorf("settle %s: %w", workID, err)
		}
		if _, err := tx.ExecContext(ctx, move, cents, cents, userID); err != nil {
			return fmt.Errorf("settle %s: %w", workID, err)
		}
		if capture {
			if _, err := tx.ExecContext(ctx, captureUsage, userID, domain.UsageMonth(time.Now()), cents); err != nil {
				return fmt.Errorf("settle %s: usage: %w", workID, err)
			}
		}
		settled = true
		return nil
	})
	return settled, err
}

func (s *Store) OpenHolds(ctx context.Context, createdBefore time.Time) ([]domain.OpenHold, error) {
	return s.queryHolds(ctx, `WHERE created_at < ? ORDER BY created_at`, formatTime(createdBefore))
}

func (s *Store) AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error) {
	if _, err := s.GetAccountHeader(ctx, userID); err != nil {
		return nil, err
	}
	holds, err := s.queryHolds(ctx, `WHERE user_id = ? ORDER BY created_at`, userID)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Hold, 0, len(holds))
	for _, h := range holds {
		out = append(out, h.Hold)
	}
	return out, nil
}

func (s *Store) queryHolds(ctx context.Context, where string, args ...any) ([]domain.OpenHold, error) {
	return queryRows(ctx, s, "list holds", `SELECT user_id, work_id, kind, amount, created_at FROM holds `+where, args,
		func(rows *sql.Rows) (domain.OpenHold, error) {
			var h domain.OpenHold
			var kind, created string
			var cents int64
			err := rows.Scan(&h.UserID, &h.WorkID, &kind, &cents, &created)
			if err != nil {
				return domain.OpenHold{}, fmt.Errorf("list holds: %w", err)
			}
			h.Kind, h.Amount = domain.WorkKind(kind), domain.CentsToCredits(cents)
			h.CreatedAt, err = parseTime(created)
			return h, err
		})
}
