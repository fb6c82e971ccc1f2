package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// centsTotals are an account's totals as the accounts row keeps them.
type centsTotals struct{ balance, held, captured, granted int64 }

func (c centsTotals) credits() domain.Totals {
	return domain.Totals{Balance: domain.CentsToCredits(c.balance), Held: domain.CentsToCredits(c.held),
		Captured: domain.CentsToCredits(c.captured), Granted: domain.CentsToCredits(c.granted)}
}

// readTotals reads the account's totals inside a ledger transaction.
func readTotals(ctx context.Context, tx *sql.Tx, userID string) (centsTotals, error) {
	var c centsTotals
	err := tx.QueryRowContext(ctx, `SELECT balance, held, captured, granted FROM accounts WHERE user_id = ?`, userID).
		Scan(&c.balance, &c.held, &c.captured, &c.granted)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("read account %s: %w", userID, err)
	}
	return c, nil
}

// appendEntry appends e to the account's journal inside the transaction
// that made its change: e's seq follows the last entry, its totals are the
// account's before it with e applied, and its time is never before the
// last entry's, so seq order and time order agree. An account whose totals
// predate its journal gets an opening entry first.
func appendEntry(ctx context.Context, tx *sql.Tx, userID string, before centsTotals, e domain.JournalEntry) error {
	var lastAt string
	err := tx.QueryRowContext(ctx, `SELECT seq, at FROM journal WHERE user_id = ? ORDER BY seq DESC LIMIT 1`, userID).Scan(&e.Seq, &lastAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if before != (centsTotals{}) {
			if err := insertEntry(ctx, tx, userID, domain.JournalEntry{Seq: 1, Type: domain.EntryOpening, After: before.credits(), At: e.At}); err != nil {
				return err
			}
			e.Seq, lastAt = 1, formatTime(e.At)
		}
	case err != nil:
		return fmt.Errorf("journal of %s: %w", userID, err)
	}
	if last, err := parseTime(lastAt); err == nil && e.At.Before(last) {
		e.At = last
	}
	e.Seq++
	e.After = before.credits().Apply(e.Type, e.Amount)
	return insertEntry(ctx, tx, userID, e)
}

func insertEntry(ctx context.Context, tx *sql.Tx, userID string, e domain.JournalEntry) error {
	cents := func(d decimal.Decimal) int64 { return d.Shift(2).IntPart() }
	_, err := tx.ExecContext(ctx, `INSERT INTO journal (user_id, seq, at, type, amount, balance, held, captured, granted,
		work_id, work_kind, grant_id, model, key_prefix) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		userID, e.Seq, formatTime(e.At), string(e.Type), cents(e.Amount), cents(e.After.Balance), cents(e.After.Held),
		cents(e.After.Captured), cents(e.After.Granted), e.WorkID, string(e.WorkKind), e.GrantID, e.Model, e.KeyPrefix)
	if err != nil {
		return fmt.Errorf("journal of %s: entry %d: %w", userID, e.Seq, err)
	}
	return nil
}

const journalColumns = `seq, at, type, amount, balance, held, captured, granted, work_id, work_kind, grant_id, model, key_prefix`

// JournalEntries reads one window of the account's entries in the time
// range after the cursor (q.Window() of them) and applies the type and
// work filters to it, as the DynamoDB adapter does.
func (s *Store) JournalEntries(ctx context.Context, q store.JournalQuery) (store.Page[domain.JournalEntry], error) {
	where, args := `WHERE user_id = ?`, []any{q.UserID}
	if !q.From.IsZero() {
		where, args = where+` AND at >= ?`, append(args, formatTime(q.From))
	}
	if !q.To.IsZero() {
		where, args = where+` AND at < ?`, append(args, formatTime(q.To))
	}
	_, seq, after, err := store.ParseJournalCursor(q.Cursor)
	if err != nil {
		return store.Page[domain.JournalEntry]{}, err
	}
	if after {
		where, args = where+` AND seq < ?`, append(args, seq)
	}
	window := q.Window()
	entries, err := queryRows(ctx, s, "journal of "+q.UserID,
		`SELECT `+journalColumns+` FROM journal `+where+` ORDER BY seq DESC LIMIT ?`, append(args, window+1), scanEntry)
	if err != nil {
		return store.Page[domain.JournalEntry]{}, err
	}
	return windowPage(entries, window, q.Limit, q.Matches, store.JournalCursorOf), nil
}

func scanEntry(rows *sql.Rows) (domain.JournalEntry, error) {
	var e domain.JournalEntry
	var at, typ, kind string
	var amount, balance, held, captured, granted int64
	if err := rows.Scan(&e.Seq, &at, &typ, &amount, &balance, &held, &captured, &granted,
		&e.WorkID, &kind, &e.GrantID, &e.Model, &e.KeyPrefix); err != nil {
		return e, fmt.Errorf("read journal: %w", err)
	}
	e.Type, e.WorkKind, e.Amount = domain.EntryType(typ), domain.WorkKind(kind), domain.CentsToCredits(amount)
	e.After = centsTotals{balance: balance, held: held, captured: captured, granted: granted}.credits()
	var err error
	e.At, err = parseTime(at)
	return e, err
}

func (s *Store) UsageCounts(ctx context.Context, userID, fromDay, toDay string) ([]domain.UsageCount, error) {
	return queryRows(ctx, s, "usage of "+userID,
		`SELECT day, model, key_prefix, credits, generations, videos FROM usage_daily
		 WHERE user_id = ? AND day >= ? AND day <= ? ORDER BY day, model, key_prefix`, []any{userID, fromDay, toDay},
		func(rows *sql.Rows) (domain.UsageCount, error) {
			var u domain.UsageCount
			var cents int64
			if err := rows.Scan(&u.Day, &u.Model, &u.KeyPrefix, &cents, &u.Generations, &u.Videos); err != nil {
				return u, fmt.Errorf("read usage: %w", err)
			}
			u.Credits = domain.CentsToCredits(cents)
			return u, nil
		})
}

func (s *Store) KeySpend(ctx context.Context, userID, day string) (map[string]decimal.Decimal, error) {
	type spend struct {
		prefix string
		cents  int64
	}
	rows, err := queryRows(ctx, s, "key spend of "+userID,
		`SELECT key_prefix, spent FROM key_spend WHERE user_id = ? AND day = ?`, []any{userID, day},
		func(rows *sql.Rows) (spend, error) {
			var sp spend
			err := rows.Scan(&sp.prefix, &sp.cents)
			return sp, err
		})
	if err != nil {
		return nil, err
	}
	out := make(map[string]decimal.Decimal, len(rows))
	for _, sp := range rows {
		out[sp.prefix] = domain.CentsToCredits(sp.cents)
	}
	return out, nil
}

func (s *Store) AccountIDs(ctx context.Context) ([]string, error) {
	return queryRows(ctx, s, "list accounts", `SELECT user_id FROM accounts ORDER BY user_id`, nil,
		func(rows *sql.Rows) (string, error) {
			var id string
			err := rows.Scan(&id)
			return id, err
		})
}
