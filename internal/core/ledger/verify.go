// Package ledger checks the books: it replays each account's journal
// against the account (what `mediagen ledger verify` and every store's
// conformance suite run), reading only the store's journal port.
package ledger

import (
	"context"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// JournalStore is what verifying the ledger reads.
type journalStore interface {
	AccountIDs(ctx context.Context) ([]string, error)
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
	AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error)
	JournalEntries(ctx context.Context, q store.JournalQuery) (store.Page[domain.JournalEntry], error)
}

// Discrepancy is one way an account's journal and its totals disagree.
type discrepancy struct {
	UserID  string `json:"user_id"`
	Seq     int64  `json:"seq,omitempty"`
	Problem string `json:"problem"`
}

// Verified is what `mediagen ledger verify` reports.
type Verified struct {
	Accounts      int           `json:"accounts"`
	Entries       int           `json:"entries"`
	Discrepancies []discrepancy `json:"discrepancies"`
}

// Verify replays the journal of every account (or of userID alone)
// and checks it against the account: in each purse (domain.JournalEntry)
// the entries' seqs run from 1 with no gap and each entry's totals are the
// purse's previous ones with its movement applied (domain.Totals.Apply);
// the purses' last ones add up to the account's balance, held, captured
// and granted; the transfers between purses add up to nothing; each work is held once and settled at most once,
// for the amount held; and the works held and not settled are exactly the
// account's open holds. Run it while no ledger write is in flight for the
// accounts checked (the journal and the account are read one after the
// other).
func Verify(ctx context.Context, st journalStore, userID string) (Verified, error) {
	ids := []string{userID}
	if userID == "" {
		var err error
		if ids, err = st.AccountIDs(ctx); err != nil {
			return Verified{}, fmt.Errorf("verify ledger: %w", err)
		}
	}
	out := Verified{Discrepancies: []discrepancy{}}
	for _, id := range ids {
		n, problems, err := verifyAccount(ctx, st, id)
		if err != nil {
			return Verified{}, fmt.Errorf("verify ledger of %s: %w", id, err)
		}
		out.Accounts++
		out.Entries += n
		out.Discrepancies = append(out.Discrepancies, problems...)
	}
	return out, nil
}

// journalOf reads an account's whole journal, oldest first.
func journalOf(ctx context.Context, st journalStore, userID string) ([]domain.JournalEntry, error) {
	var entries []domain.JournalEntry
	q := store.JournalQuery{UserID: userID, Limit: 100}
	for {
		page, err := st.JournalEntries(ctx, q)
		if err != nil {
			return nil, err
		}
		entries = append(entries, page.Items...)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	slices.Reverse(entries)
	return entries, nil
}

func verifyAccount(ctx context.Context, st journalStore, userID string) (int, []discrepancy, error) {
	entries, err := journalOf(ctx, st, userID)
	if err != nil {
		return 0, nil, err
	}
	a, err := st.GetAccount(ctx, userID)
	if err != nil {
		return 0, nil, err
	}
	open, err := st.AccountHolds(ctx, userID)
	if err != nil {
		return 0, nil, err
	}
	var problems []discrepancy
	report := func(purse int, seq int64, format string, args ...any) {
		if purse != 0 {
			format = fmt.Sprintf("purse %d: ", purse) + format
		}
		problems = append(problems, discrepancy{UserID: userID, Seq: seq, Problem: fmt.Sprintf(format, args...)})
	}
	type purseState struct {
		running domain.Totals
		last    int64
	}
	purses := map[int]*purseState{}
	held := map[string]domain.JournalEntry{} // work id → its hold entry
	settled := map[string]bool{}             // work ids settled
	opened := false                          // an opening entry carried earlier totals
	transfers := decimal.Zero
	for _, e := range entries {
		p := purses[e.Purse]
		if p == nil {
			p = &purseState{}
			purses[e.Purse] = p
		}
		if e.Purse < 0 || e.Purse >= domain.Purses {
			report(e.Purse, e.Seq, "an entry of purse %d, past the %d purses an account has", e.Purse, domain.Purses)
		}
		if want := p.last + 1; e.Seq != want {
			report(e.Purse, e.Seq, "entry %d follows entry %d: the seqs have a gap or a repeat", e.Seq, want-1)
		}
		p.last = e.Seq
		running := p.running
		switch e.Type {
		case domain.EntryOpening:
			if e.Seq != 1 {
				report(e.Purse, e.Seq, "an opening entry that is not the first")
			}
			running, opened = e.After, true
		case domain.EntryGrant:
			running = running.Apply(e.Type, e.Amount)
		case domain.EntryTransfer:
			transfers = transfers.Add(e.Amount)
			running = running.Apply(e.Type, e.Amount)
		case domain.EntryHold:
			if _, again := held[e.WorkID]; again {
				report(e.Purse, e.Seq, "work %s held twice", e.WorkID)
			}
			held[e.WorkID] = e
			running = running.Apply(e.Type, e.Amount)
		case domain.EntryCapture, domain.EntryRelease, domain.EntryRefund:
			h, ok := held[e.WorkID]
			switch {
			case settled[e.WorkID]:
				report(e.Purse, e.Seq, "work %s settled twice", e.WorkID)
			case !ok && !opened:
				report(e.Purse, e.Seq, "work %s settled but never held", e.WorkID)
			case ok && !h.Amount.Equal(e.Amount):
				report(e.Purse, e.Seq, "work %s held %s but settled %s", e.WorkID, h.Amount.StringFixed(2), e.Amount.StringFixed(2))
			case ok && h.Purse != e.Purse:
				report(e.Purse, e.Seq, "work %s held in purse %d but settled in purse %d", e.WorkID, h.Purse, e.Purse)
			}
			settled[e.WorkID] = true
			running = running.Apply(e.Type, e.Amount)
		default:
			report(e.Purse, e.Seq, "unknown entry type %q", e.Type)
		}
		if !sameTotals(running, e.After) {
			report(e.Purse, e.Seq, "the entry says %s after it; replaying gives %s", totalsText(e.After), totalsText(running))
			running = e.After // report each break once, not every entry after it
		}
		if running.Balance.IsNegative() || running.Held.IsNegative() {
			report(e.Purse, e.Seq, "negative totals after the entry: %s", totalsText(running))
		}
		p.running = running
	}
	if !transfers.IsZero() {
		report(0, 0, "the transfers between purses add up to %s, not 0", transfers.StringFixed(2))
	}
	var running domain.Totals
	for _, p := range purses {
		running.Balance, running.Held = running.Balance.Add(p.running.Balance), running.Held.Add(p.running.Held)
		running.Captured, running.Granted = running.Captured.Add(p.running.Captured), running.Granted.Add(p.running.Granted)
	}
	if !sameTotals(running, a.Totals()) {
		report(0, 0, "the journal's purses end at %s together; the account has %s", totalsText(running), totalsText(a.Totals()))
	}
	if !a.Granted.Equal(a.Balance.Add(a.Held).Add(a.Captured)) {
		report(0, 0, "the account's granted %s is not balance + held + captured", a.Granted.StringFixed(2))
	}
	openByWork := map[string]domain.Hold{}
	for _, h := range open {
		openByWork[h.WorkID] = h
		e, ok := held[h.WorkID]
		switch {
		case !ok && !opened:
			report(0, 0, "open hold %s has no hold entry", h.WorkID)
		case ok && !e.Amount.Equal(h.Amount):
			report(0, 0, "open hold %s is for %s; its entry says %s", h.WorkID, h.Amount.StringFixed(2), e.Amount.StringFixed(2))
		case settled[h.WorkID]:
			report(0, 0, "hold %s is open but its work was settled", h.WorkID)
		}
	}
	for work, e := range held {
		if _, ok := openByWork[work]; !ok && !settled[work] {
			report(e.Purse, e.Seq, "work %s was held and never settled, but no hold is open", work)
		}
	}
	slices.SortStableFunc(problems, func(x, y discrepancy) int { return int(x.Seq - y.Seq) })
	return len(entries), problems, nil
}

func sameTotals(x, y domain.Totals) bool {
	return x.Balance.Equal(y.Balance) && x.Held.Equal(y.Held) && x.Captured.Equal(y.Captured) && x.Granted.Equal(y.Granted)
}

func totalsText(t domain.Totals) string {
	return fmt.Sprintf("balance %s, held %s, captured %s, granted %s",
		t.Balance.StringFixed(2), t.Held.StringFixed(2), t.Captured.StringFixed(2), t.Granted.StringFixed(2))
}
