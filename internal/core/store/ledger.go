package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Ledger moves credits. Every operation is idempotent by the id it is given
// and changes the account in one atomic write, so that
// Granted = Balance + Held + Captured holds after any crash or retry.
type Ledger interface {
	// Grant adds credits once per grantID (unique within the account);
	// applied is false when that grant was already applied.
	Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (applied bool, err error)
	// Hold reserves h.Amount for h.WorkID. It fails with an
	// *domain.InsufficientCreditsError and changes nothing when the balance is
	// short, and with a *domain.KeyBudgetExceededError when h.KeyPrefix's
	// holds of the UTC day would pass h.KeyDailyLimit. Holding the same open
	// work again changes nothing. Work ids are minted per request and never
	// held again after settlement.
	Hold(ctx context.Context, userID string, h domain.Hold) error
	// Capture spends an open hold; Release returns it to the balance (its
	// work failed) and Refund too (its work was canceled). Each settles a
	// hold at most once: settled is false when the hold was not open
	// (already settled, or never made).
	Capture(ctx context.Context, userID, workID string) (settled bool, err error)
	Release(ctx context.Context, userID, workID string) (settled bool, err error)
	Refund(ctx context.Context, userID, workID string) (settled bool, err error)
	// OpenHolds lists holds created before the given time, for the sweeper.
	OpenHolds(ctx context.Context, createdBefore time.Time) ([]domain.OpenHold, error)
	// AccountHolds lists an account's open holds, oldest first, for
	// administration (no request path reads them); ErrNotFound if the
	// account is absent.
	AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error)
}

// Journal reads what the ledger wrote: every grant, hold and settlement is
// one entry, appended in the same atomic write as the account's totals it
// changed (domain.JournalEntry), and a capture adds to the account's usage
// counters of its day, model and key in that write too.
type Journal interface {
	// JournalEntries pages an account's entries, newest first; the cursor
	// is the At and Seq of the last entry returned, or of the last one
	// examined when a filtered page ends short (see ExamineLimit).
	JournalEntries(ctx context.Context, q JournalQuery) (Page[domain.JournalEntry], error)
	// UsageCounts are the account's usage counters of the UTC days from
	// fromDay to toDay (both "2006-01-02", inclusive).
	UsageCounts(ctx context.Context, userID, fromDay, toDay string) ([]domain.UsageCount, error)
	// KeySpend is what each of the account's keys' holds took on the UTC
	// day, less what was released or refunded (absent: nothing).
	KeySpend(ctx context.Context, userID, day string) (map[string]decimal.Decimal, error)
	// AccountIDs lists every account, for `mediagen ledger verify`
	// (administration; no request path calls it).
	AccountIDs(ctx context.Context) ([]string, error)
}

// JournalQuery selects one page of an account's journal.
type JournalQuery struct {
	UserID string
	Type   domain.EntryType // empty: every type
	WorkID string           // empty: every work
	// From and To bound the entries' At: From <= At < To; zero: unbounded.
	From, To time.Time
	Limit    int
	Cursor   string
}

// Filtered says whether the query has a filter besides its time range
// (a key range on both stores), and so examines ExamineLimit entries.
func (q JournalQuery) Filtered() bool { return q.Type != "" || q.WorkID != "" }

// Window is how many entries a page of the query examines.
func (q JournalQuery) Window() int { return window(q.Limit, q.Filtered()) }

// Matches applies the query's type and work filters to an entry.
func (q JournalQuery) Matches(e domain.JournalEntry) bool {
	return (q.Type == "" || e.Type == q.Type) && (q.WorkID == "" || e.WorkID == q.WorkID)
}

// JournalCursorOf is the cursor after entry e of a journal page.
func JournalCursorOf(e domain.JournalEntry) Cursor {
	id := strconv.FormatInt(e.Seq, 10)
	if e.Purse != 0 {
		id = strconv.Itoa(e.Purse) + "." + id
	}
	return Cursor{CreatedAt: e.At, ID: id}
}

// ParseJournalPosition reads a journal page's cursor with the purse of its
// last entry (ParseJournalCursor's, for a store that keeps purses).
func ParseJournalPosition(s string) (at time.Time, purse int, seq int64, ok bool, err error) {
	c, ok, err := ParseCursor(s)
	if err != nil || !ok {
		return time.Time{}, 0, 0, false, err
	}
	id := c.ID
	if p, rest, found := strings.Cut(id, "."); found {
		if purse, err = strconv.Atoi(p); err != nil || purse < 1 || purse >= domain.Purses {
			return time.Time{}, 0, 0, false, fmt.Errorf("%w: cursor is not one this API gave out", domain.ErrInvalid)
		}
		id = rest
	}
	seq, err = strconv.ParseInt(id, 10, 64)
	if err != nil || seq < 1 {
		return time.Time{}, 0, 0, false, fmt.Errorf("%w: cursor is not one this API gave out", domain.ErrInvalid)
	}
	return c.CreatedAt, purse, seq, true, nil
}

// ParseJournalCursor reads a journal page's cursor: the time and seq of the
// last entry returned (ok false for the first page).
func ParseJournalCursor(s string) (at time.Time, seq int64, ok bool, err error) {
	c, ok, err := ParseCursor(s)
	if err != nil || !ok {
		return time.Time{}, 0, false, err
	}
	seq, err = strconv.ParseInt(c.ID, 10, 64)
	if err != nil || seq < 1 {
		return time.Time{}, 0, false, fmt.Errorf("%w: cursor is not one this API gave out", domain.ErrInvalid)
	}
	return c.CreatedAt, seq, true, nil
}
