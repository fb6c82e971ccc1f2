package domain

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// EntryType names a movement of credits in an account's journal.
type EntryType string

const (
	// EntryOpening carries an account's totals from before its journal
	// began (an account opened before the journal existed); it is the
	// first entry of such an account and moves nothing.
	EntryOpening EntryType = "opening"
	EntryGrant   EntryType = "grant"
	EntryHold    EntryType = "hold"
	EntryCapture EntryType = "capture"
	// EntryRelease returns a hold whose work failed; EntryRefund one whose
	// work the caller canceled. Both move the amount from held back to the
	// balance.
	EntryRelease EntryType = "release"
	EntryRefund  EntryType = "refund"
	// EntryTransfer moves balance between two purses of one account (a
	// hold that no purse alone could cover, or spreading credits under a
	// burst): its amount is signed, negative on the purse it leaves and
	// positive on the one it joins, in one atomic write, so the account's
	// totals do not change.
	EntryTransfer EntryType = "transfer"
)

// entryTypes lists the types a caller may filter the journal by.
var entryTypes = []EntryType{EntryOpening, EntryGrant, EntryHold, EntryCapture, EntryRelease, EntryRefund, EntryTransfer}

// ParseEntryType accepts exactly the documented entry types.
func ParseEntryType(s string) (EntryType, error) {
	for _, t := range entryTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("%w: unknown transaction type %q (allowed: opening, grant, hold, capture, release, refund, transfer)", ErrInvalid, s)
}

// Totals are an account's four amounts; Granted = Balance + Held + Captured.
type Totals struct {
	Balance, Held, Captured, Granted decimal.Decimal
}

// Apply is the totals after an entry of this type and amount: the one
// definition of what each movement does, used by both stores to write the
// "after" amounts and by `mediagen ledger verify` to replay them.
func (t Totals) Apply(typ EntryType, amount decimal.Decimal) Totals {
	switch typ {
	case EntryGrant:
		t.Balance, t.Granted = t.Balance.Add(amount), t.Granted.Add(amount)
	case EntryHold:
		t.Balance, t.Held = t.Balance.Sub(amount), t.Held.Add(amount)
	case EntryCapture:
		t.Held, t.Captured = t.Held.Sub(amount), t.Captured.Add(amount)
	case EntryRelease, EntryRefund:
		t.Held, t.Balance = t.Held.Sub(amount), t.Balance.Add(amount)
	case EntryTransfer:
		// A purse's granted counts what came into it, so that each purse
		// keeps granted = balance + held + captured on its own.
		t.Balance, t.Granted = t.Balance.Add(amount), t.Granted.Add(amount)
	}
	return t
}

// Totals of an account.
func (a Account) Totals() Totals {
	return Totals{Balance: a.Balance, Held: a.Held, Captured: a.Captured, Granted: a.Granted}
}

// JournalEntry is one movement of credits, written in the same atomic write
// as the change of the totals it records, and never changed after.
//
// An account's credits are kept in purses (Purses at most), so that a
// burst of one account's writes is not a queue on one item: each entry
// moves the credits of one purse, Seq counts that purse's entries from 1
// with no gap, and After are that purse's totals once the entry applied.
// The account's totals are the sum of its purses'. Purse 0 is the
// account's first, and its only one until a burst spreads it (the
// embedded store, which serializes its writes, keeps only purse 0).
type JournalEntry struct {
	Purse  int
	Seq    int64
	Type   EntryType
	Amount decimal.Decimal
	// After are the purse's totals once the entry applied.
	After Totals
	// WorkID and WorkKind name the generation or long video of a hold and
	// its settlement; GrantID the grant of a grant entry.
	WorkID   string
	WorkKind WorkKind
	GrantID  string
	// Model is the model the work ran; KeyPrefix the API key that started
	// it (empty for an identity-provider token or the admin command).
	Model     string
	KeyPrefix string
	At        time.Time
}

// Purses bounds the purses of an account.
const Purses = 8

// EntryID names an entry in the API: txn_<seq> in purse 0 (as before
// accounts had purses), txn_<purse>.<seq> in the others.
func (e JournalEntry) EntryID() string {
	if e.Purse == 0 {
		return fmt.Sprintf("txn_%d", e.Seq)
	}
	return fmt.Sprintf("txn_%d.%d", e.Purse, e.Seq)
}

// UsageCount is what an account's captures added up to on one UTC day for
// one model and one key: counters kept in the capture's own write.
type UsageCount struct {
	Day       string // 2006-01-02
	Model     string
	KeyPrefix string
	Credits   decimal.Decimal
	// Generations and Videos count the captured works of each kind.
	Generations int
	Videos      int
}

// UsageDay is the UTC day of t, as usage and key budgets count it.
func UsageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// KeyBudgetExceededError refuses a hold that would take an API key's
// spend of the day past its daily credit limit. Spend is what the key's
// holds of the UTC day took, less what was released or refunded.
type KeyBudgetExceededError struct {
	// KeyPrefix is the key whose limit was hit: the request's own key, or
	// (Above) a key above it, whose limit its whole tree shares.
	KeyPrefix string
	Above     bool
	Limit     decimal.Decimal
	Spent     decimal.Decimal
	Required  decimal.Decimal
	ResetAt   time.Time
}

func (e *KeyBudgetExceededError) Error() string {
	return fmt.Sprintf("key %s: daily credit limit %s: %s spent today, %s required",
		e.KeyPrefix, e.Limit.StringFixed(2), e.Spent.StringFixed(2), e.Required.StringFixed(2))
}

// Scope names what an API key may do.
type Scope string

const (
	ScopeGenerate Scope = "generate"
	ScopeRead     Scope = "read"
	ScopeAdmin    Scope = "admin"
)

// AllScopes are every scope, in the order they are documented.
var AllScopes = []Scope{ScopeGenerate, ScopeRead, ScopeAdmin}

// Caller is who made a request: the API key that authenticated it, or an
// identity-provider token (KeyPrefix empty, every scope). The gate puts it
// in the request's context, so the use cases that record who started a
// piece of work (the hold) need no extra argument on every route.
type Caller struct {
	KeyPrefix        string
	Scopes           []Scope
	DailyCreditLimit decimal.Decimal // zero: no limit
	// Ancestors are the keys above the caller's key, nearest first
	// (APIKey.Ancestors): their limits bound its holds too.
	Ancestors []KeyLimit
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom is the caller of the request ctx belongs to (false: none, such
// as a workflow step or the admin command).
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Counts is what one captured work of this kind adds to the usage counters:
// a generation or a video.
func (k WorkKind) Counts() (generations, videos int) {
	if k == WorkLongVideo {
		return 0, 1
	}
	return 1, 0
}

// KeyChain is the keys a hold's amount counts against on its UTC day, each
// with its daily limit: the hold's key, then the keys above it, nearest
// first. Empty for a hold no key made. Both stores walk this one chain, so
// a tree of keys never spends more a day than its root allows.
func (h Hold) KeyChain() []KeyLimit {
	if h.KeyPrefix == "" {
		return nil
	}
	return append([]KeyLimit{{Prefix: h.KeyPrefix, DailyCreditLimit: h.KeyDailyLimit}}, h.KeyAncestors...)
}

// KeyChainPrefixes are the prefixes of KeyChain, which a hold records so
// that its release gives back to the same keys.
func (h Hold) KeyChainPrefixes() []string {
	chain := h.KeyChain()
	out := make([]string, len(chain))
	for i, k := range chain {
		out[i] = k.Prefix
	}
	return out
}

// AncestorPrefixes are the prefixes of the keys above the hold's key.
func (h Hold) AncestorPrefixes() []string {
	out := make([]string, len(h.KeyAncestors))
	for i, k := range h.KeyAncestors {
		out[i] = k.Prefix
	}
	return out
}

// CheckKeyBudget refuses h when a key of its chain has a limit and, having
// spent spent[i] (its own holds and those of the keys below it) on h's UTC
// day, would pass it. The error names the first such key.
func CheckKeyBudget(h Hold, spent []decimal.Decimal) error {
	for i, k := range h.KeyChain() {
		if !k.DailyCreditLimit.IsPositive() || spent[i].Add(h.Amount).LessThanOrEqual(k.DailyCreditLimit) {
			continue
		}
		day := h.CreatedAt.UTC().Truncate(24 * time.Hour)
		return &KeyBudgetExceededError{KeyPrefix: k.Prefix, Limit: k.DailyCreditLimit, Spent: spent[i], Required: h.Amount,
			ResetAt: day.Add(24 * time.Hour), Above: i > 0}
	}
	return nil
}

// NewHold is the hold of a piece of work that the request of ctx starts:
// it names the caller's key and carries the daily limits of that key and
// of the keys above it.
func NewHold(ctx context.Context, workID string, kind WorkKind, amount decimal.Decimal, at time.Time, model string) Hold {
	h := Hold{WorkID: workID, Kind: kind, Amount: amount, CreatedAt: at, Model: model}
	if c, ok := CallerFrom(ctx); ok && c.KeyPrefix != "" {
		h.KeyPrefix, h.KeyDailyLimit, h.KeyAncestors = c.KeyPrefix, c.DailyCreditLimit, c.Ancestors
	}
	return h
}

// Settler settles holds (the ledger's Capture, Release and Refund).
type Settler interface {
	Capture(ctx context.Context, userID, workID string) (bool, error)
	Release(ctx context.Context, userID, workID string) (bool, error)
	Refund(ctx context.Context, userID, workID string) (bool, error)
}

// Settle settles the hold of a work that ended with status: captured when
// it completed, refunded when its caller canceled it, released otherwise.
// It says how, and whether this call settled it (false: it already was).
func Settle(ctx context.Context, st Settler, userID, workID string, status Status) (EntryType, bool, error) {
	typ, op := EntryRelease, st.Release
	switch status {
	case StatusCompleted:
		typ, op = EntryCapture, st.Capture
	case StatusCanceled:
		typ, op = EntryRefund, st.Refund
	}
	settled, err := op(ctx, userID, workID)
	return typ, settled, err
}
