package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Every ledger operation is one SQLite transaction that changes the
// account's totals and appends the journal entry recording the change
// (appendEntry), so the two can never disagree.

func (s *Store) Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (bool, error) {
	cents, err := domain.CreditsToCents(amount)
	if err != nil {
		return false, fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
	}
	applied := false
	err = s.tx(ctx, "grant "+grantID, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM grants WHERE user_id = ? AND grant_id = ?`, userID, grantID).Scan(&one)
		if err == nil {
			return nil // applied before
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
		}
		before, err := readTotals(ctx, tx, userID)
		if err != nil {
			return fmt.Errorf("grant %s: %w", grantID, err)
		}
		now := time.Now()
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + ?, granted = granted + ? WHERE user_id = ?`,
			cents, cents, userID); err != nil {
			return fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO grants (user_id, grant_id, amount, created_at) VALUES (?, ?, ?, ?)`,
			userID, grantID, cents, formatTime(now)); err != nil {
			return fmt.Errorf("record grant %s: %w", grantID, err)
		}
		applied = true
		return appendEntry(ctx, tx, userID, before, domain.JournalEntry{Type: domain.EntryGrant, Amount: amount, GrantID: grantID, At: now})
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
		before, err := readTotals(ctx, tx, userID)
		if err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		if before.balance < cents {
			return fmt.Errorf("hold %s: %w", h.WorkID, &domain.InsufficientCreditsError{
				Required: h.Amount, Available: domain.CentsToCredits(before.balance)})
		}
		if err := spendKeyBudget(ctx, tx, userID, h, cents); err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - ?, held = held + ? WHERE user_id = ?`,
			cents, cents, userID); err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO holds (work_id, user_id, kind, amount, created_at, model, key_prefix, key_ancestors)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			h.WorkID, userID, string(h.Kind), cents, formatTime(h.CreatedAt), h.Model, h.KeyPrefix, strings.Join(h.AncestorPrefixes(), ",")); err != nil {
			return fmt.Errorf("hold %s: %w", h.WorkID, err)
		}
		return appendEntry(ctx, tx, userID, before, domain.JournalEntry{Type: domain.EntryHold, Amount: h.Amount,
			WorkID: h.WorkID, WorkKind: h.Kind, Model: h.Model, KeyPrefix: h.KeyPrefix, At: h.CreatedAt})
	})
}

// spendKeyBudget adds a hold to the spend of its key and of every key above
// it on the hold's UTC day, refusing it when that would pass one of their
// daily limits (domain.CheckKeyBudget).
func spendKeyBudget(ctx context.Context, tx *sql.Tx, userID string, h domain.Hold, cents int64) error {
	chain := h.KeyChain()
	if len(chain) == 0 {
		return nil
	}
	day := domain.UsageDay(h.CreatedAt)
	spent := make([]decimal.Decimal, len(chain))
	for i, k := range chain {
		var c int64
		err := tx.QueryRowContext(ctx, `SELECT spent FROM key_spend WHERE user_id = ? AND key_prefix = ? AND day = ?`,
			userID, k.Prefix, day).Scan(&c)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("key %s spend: %w", k.Prefix, err)
		}
		spent[i] = domain.CentsToCredits(c)
	}
	if err := domain.CheckKeyBudget(h, spent); err != nil {
		return err
	}
	for _, k := range chain {
		if _, err := tx.ExecContext(ctx, `INSERT INTO key_spend (user_id, key_prefix, day, spent) VALUES (?, ?, ?, ?)
			ON CONFLICT(user_id, key_prefix, day) DO UPDATE SET spent = spent + excluded.spent`, userID, k.Prefix, day, cents); err != nil {
			return fmt.Errorf("key %s spend: %w", k.Prefix, err)
		}
	}
	return nil
}

// splitAncestors reads a hold's key_ancestors column: the prefixes above
// its key, nearest first, comma separated.
func splitAncestors(col string) []domain.KeyLimit {
	if col == "" {
		return nil
	}
	var out []domain.KeyLimit
	for _, p := range strings.Split(col, ",") {
		out = append(out, domain.KeyLimit{Prefix: p})
	}
	return out
}

func (s *Store) Capture(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, domain.EntryCapture)
}

func (s *Store) Release(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, domain.EntryRelease)
}

func (s *Store) Refund(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, domain.EntryRefund)
}

// captureUsage adds a captured hold to the account's usage of this month.
const captureUsage = `INSERT INTO usage (user_id, month, credits, jobs) VALUES (?, ?, ?, 1)
	ON CONFLICT(user_id, month) DO UPDATE SET credits = credits + excluded.credits, jobs = jobs + 1`

// captureUsageDay adds it to the day's counters of its model and key.
const captureUsageDay = `INSERT INTO usage_daily (user_id, day, model, key_prefix, credits, generations, videos) VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT(user_id, day, model, key_prefix) DO UPDATE SET credits = credits + excluded.credits,
	generations = generations + excluded.generations, videos = videos + excluded.videos`

// settle ends an open hold as typ (capture, release or refund): the hold
// row goes, its amount moves, and the entry is appended, in one
// transaction.
func (s *Store) settle(ctx context.Context, userID, workID string, typ domain.EntryType) (bool, error) {
	move := `UPDATE accounts SET held = held - ?, balance = balance + ? WHERE user_id = ?`
	if typ == domain.EntryCapture {
		move = `UPDATE accounts SET held = held - ?, captured = captured + ? WHERE user_id = ?`
	}
	settled := false
	err := s.tx(ctx, "settle "+workID, func(tx *sql.Tx) error {
		var cents int64
		var kind, model, prefix, ancestors, created string
		err := tx.QueryRowContext(ctx, `DELETE FROM holds WHERE work_id = ? AND user_id = ? RETURNING amount, kind, model, key_prefix, key_ancestors, created_at`,
			workID, userID).Scan(&cents, &kind, &model, &prefix, &ancestors, &created)
		if errors.Is(err, sql.ErrNoRows) {
			// Not open: already settled or never held, unless the account is missing.
			return s.explainNoAccount(ctx, tx, userID)
		}
		if err != nil {
			return fmt.Errorf("settle %s: %w", workID, err)
		}
		heldAt, err := parseTime(created)
		if err != nil {
			return fmt.Errorf("settle %s: %w", workID, err)
		}
		before, err := readTotals(ctx, tx, userID)
		if err != nil {
			return fmt.Errorf("settle %s: %w", workID, err)
		}
		if _, err := tx.ExecContext(ctx, move, cents, cents, userID); err != nil {
			return fmt.Errorf("settle %s: %w", workID, err)
		}
		now := time.Now()
		if typ == domain.EntryCapture {
			gens, videos := domain.WorkKind(kind).Counts()
			if _, err := tx.ExecContext(ctx, captureUsage, userID, domain.UsageMonth(now), cents); err != nil {
				return fmt.Errorf("settle %s: usage: %w", workID, err)
			}
			if _, err := tx.ExecContext(ctx, captureUsageDay, userID, domain.UsageDay(now), model, prefix, cents, gens, videos); err != nil {
				return fmt.Errorf("settle %s: usage: %w", workID, err)
			}
		} else {
			// What a released or refunded hold took is its keys' again.
			held := domain.Hold{KeyPrefix: prefix, KeyAncestors: splitAncestors(ancestors)}
			for _, k := range held.KeyChainPrefixes() {
				if _, err := tx.ExecContext(ctx, `UPDATE key_spend SET spent = MAX(0, spent - ?) WHERE user_id = ? AND key_prefix = ? AND day = ?`,
					cents, userID, k, domain.UsageDay(heldAt)); err != nil {
					return fmt.Errorf("settle %s: key %s spend: %w", workID, k, err)
				}
			}
		}
		settled = true
		return appendEntry(ctx, tx, userID, before, domain.JournalEntry{Type: typ, Amount: domain.CentsToCredits(cents),
			WorkID: workID, WorkKind: domain.WorkKind(kind), Model: model, KeyPrefix: prefix, At: now})
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
	return queryRows(ctx, s, "list holds", `SELECT user_id, work_id, kind, amount, created_at, model, key_prefix, key_ancestors FROM holds `+where, args,
		func(rows *sql.Rows) (domain.OpenHold, error) {
			var h domain.OpenHold
			var kind, created, ancestors string
			var cents int64
			err := rows.Scan(&h.UserID, &h.WorkID, &kind, &cents, &created, &h.Model, &h.KeyPrefix, &ancestors)
			if err != nil {
				return domain.OpenHold{}, fmt.Errorf("list holds: %w", err)
			}
			h.Kind, h.Amount, h.KeyAncestors = domain.WorkKind(kind), domain.CentsToCredits(cents), splitAncestors(ancestors)
			h.CreatedAt, err = parseTime(created)
			return h, err
		})
}
