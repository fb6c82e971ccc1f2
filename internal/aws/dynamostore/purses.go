package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// An account's credits are kept in purses (domain.Purses at most), each with
// its own totals and its own gapless journal, so that a burst of one
// account's requests is not a queue on one item: DynamoDB cancels a
// transaction that touches an item another transaction has in flight
// (TransactionConflict), so one item that every hold must write passes one
// hold at a time, whatever the retries.
//
// Purse 0 is the account item (balance, held, captured, granted, jseq and
// jat, as before purses: an account's journal until then is purse 0's);
// purse n > 0 is the ledger item "purse#<n>" with the same attributes,
// written the first time a hold spreads to it. A hold uses purse 0 while
// it can and the account never spread (purse 0 says so once a transfer
// happened); after that, a hold picks among the purses that have enough,
// and after a conflict any purse at random, and when that purse
// is short, the same transaction moves credits into it from the richest
// ones (transfer entries), half of the richest at least, so that a burst
// spreads the balance over the purses as it goes. A capture, release or
// refund writes the purse its hold took from (the hold item names it); a
// grant goes to purse 0. A hold is refused only when the purses together
// are short, on two equal reads of them (a read of several items is not a
// snapshot, and a transfer seen on one side only would look like a loss).
const pursePrefix = "purse#"

// Retries of a ledger write that other writes of the account conflicted
// with: bounded by time, with full-jitter exponential backoff, so that a
// burst spreads out; past the budget the write fails with domain.ErrBusy
// (503 with Retry-After), never an internal error.
const (
	// ledgerBudget is the default (WithLedgerBudget): far above
	// what a burst on DynamoDB takes (purses spread it over their items),
	// and within API Gateway's 30 s integration timeout.
	ledgerBudget      = 20 * time.Second
	ledgerBackoffBase = 2 * time.Millisecond
	ledgerBackoffCap  = 5 * time.Second
)

// errRebuild asks journaled for another attempt (a read that was no
// snapshot): it counts against the same budget.
var errRebuild = errors.New("read again")

type purse struct {
	n      int
	totals centsTotals
	seq    int64
	at     string
	// exists is false for a purse n > 0 not written yet.
	exists bool
	// spread: the account's purses other than 0 are in use (purse 0 only).
	spread bool
}

type purseItem struct {
	Entry      string `dynamodbav:"entry"`
	Balance    int64  `dynamodbav:"balance"`
	Held       int64  `dynamodbav:"held"`
	Captured   int64  `dynamodbav:"captured"`
	Granted    int64  `dynamodbav:"granted"`
	JournalSeq int64  `dynamodbav:"jseq"`
	JournalAt  string `dynamodbav:"jat"`
}

func purseEntry(n int) string { return pursePrefix + strconv.Itoa(n) }

func purseOf(a accountItem) purse {
	return purse{n: 0, totals: centsTotals{balance: a.Balance, held: a.Held, captured: a.Captured, granted: a.Granted},
		seq: a.JournalSeq, at: a.JournalAt, exists: true, spread: a.Spread}
}

// readPurse is a consistent read of one purse.
func (s *Store) readPurse(ctx context.Context, userID string, n int) (purse, error) {
	if n == 0 {
		a, err := s.readAccountItem(ctx, userID)
		return purseOf(a), err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, purseEntry(n)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return purse{}, fmt.Errorf("read purse %d of %s: %w", n, userID, err)
	}
	if out.Item == nil {
		return purse{n: n}, nil
	}
	var it purseItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return purse{}, fmt.Errorf("decode purse %d of %s: %w", n, userID, err)
	}
	return purse{n: n, totals: centsTotals{balance: it.Balance, held: it.Held, captured: it.Captured, granted: it.Granted},
		seq: it.JournalSeq, at: it.JournalAt, exists: true}, nil
}

// readPurses reads every purse of the account: the account item, and one
// consistent Query of the others (small items: one read unit for all).
func (s *Store) readPurses(ctx context.Context, userID string) ([]purse, error) {
	a, err := s.readAccountItem(ctx, userID)
	if err != nil {
		return nil, err
	}
	return s.pursesWith(ctx, userID, a)
}

// pursesWith reads the purses other than the account item's, read before.
func (s *Store) pursesWith(ctx context.Context, userID string, a accountItem) ([]purse, error) {
	ps := make([]purse, domain.Purses)
	ps[0] = purseOf(a)
	for n := 1; n < domain.Purses; n++ {
		ps[n] = purse{n: n}
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND begins_with(entry, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(userID), ":p": strAV(pursePrefix),
		},
		ConsistentRead: aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("purses of %s: %w", userID, err)
		}
		for _, raw := range page.Items {
			var it purseItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("decode purse of %s: %w", userID, err)
			}
			n, err := strconv.Atoi(strings.TrimPrefix(it.Entry, pursePrefix))
			if err != nil || n < 1 || n >= domain.Purses {
				continue
			}
			ps[n] = purse{n: n, totals: centsTotals{balance: it.Balance, held: it.Held, captured: it.Captured, granted: it.Granted},
				seq: it.JournalSeq, at: it.JournalAt, exists: true}
		}
	}
	return ps, nil
}

// sumPurses is the account's totals.
func sumPurses(ps []purse) centsTotals {
	var t centsTotals
	for _, p := range ps {
		t.balance += p.totals.balance
		t.held += p.totals.held
		t.captured += p.totals.captured
		t.granted += p.totals.granted
	}
	return t
}

func samePurses(a, b []purse) bool {
	return slices.EqualFunc(a, b, func(x, y purse) bool { return x.seq == y.seq && x.totals == y.totals })
}

// purseMove is what one ledger write does to one purse: its entries in
// order (a transfer in before the hold it pays for).
type purseMove struct {
	p       purse
	entries []domain.JournalEntry
}

// moveItems numbers a move's entries after the purse's last (an opening
// entry first for an account whose totals predate its journal), gives
// each the purse's totals after it, and returns the purse's update,
// conditioned on the purse's position read, and the entries' puts.
func (s *Store) moveItems(userID string, m purseMove) ([]types.TransactWriteItem, error) {
	totals := m.p.totals.credits()
	seq := m.p.seq
	last, err := parseTime(m.p.at)
	if err != nil {
		return nil, err
	}
	var entries []domain.JournalEntry
	if seq == 0 && m.p.totals != (centsTotals{}) {
		seq = 1
		entries = append(entries, domain.JournalEntry{Purse: m.p.n, Seq: 1, Type: domain.EntryOpening, After: totals, At: m.entries[0].At})
	}
	for _, e := range m.entries {
		if e.At.Before(last) {
			e.At = last // time order is seq order within a purse
		}
		seq++
		e.Purse, e.Seq = m.p.n, seq
		totals = totals.Apply(e.Type, e.Amount)
		e.After = totals
		entries = append(entries, e)
		last = e.At
	}
	transfer := slices.ContainsFunc(m.entries, func(e domain.JournalEntry) bool { return e.Type == domain.EntryTransfer })
	items := []types.TransactWriteItem{s.purseUpdate(userID, m.p, centsOf(totals), seq, last, transfer)}
	for _, e := range entries {
		item, err := entryItem(userID, e)
		if err != nil {
			return nil, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.tables.Ledger), Item: item, ConditionExpression: aws.String("attribute_not_exists(entry)"),
		}})
	}
	return items, nil
}

// purseUpdate sets a purse's totals and journal position, conditioned on
// the position being the one read; a transfer marks purse 0 spread.
func (s *Store) purseUpdate(userID string, p purse, after centsTotals, seq int64, at time.Time, transfer bool) types.TransactWriteItem {
	values := map[string]types.AttributeValue{
		":b": intAV(after.balance), ":h": intAV(after.held), ":c": intAV(after.captured), ":g": intAV(after.granted),
		":seq": intAV(seq), ":at": strAV(formatTime(at)), ":read": intAV(p.seq),
	}
	set := aws.String("SET balance = :b, held = :h, captured = :c, granted = :g, jseq = :seq, jat = :at")
	if p.n == 0 {
		if transfer && !p.spread {
			set = aws.String(*set + ", spread = :t")
			values[":t"] = &types.AttributeValueMemberBOOL{Value: true}
		}
		cond := "jseq = :read"
		if p.seq == 0 {
			cond = "attribute_exists(user_id) AND (attribute_not_exists(jseq) OR jseq = :read)"
		}
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(s.tables.Accounts), Key: key("user_id", userID),
			UpdateExpression: set, ConditionExpression: aws.String(cond), ExpressionAttributeValues: values,
		}}
	}
	cond := "jseq = :read"
	if !p.exists {
		cond = "attribute_not_exists(entry)"
		delete(values, ":read")
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, purseEntry(p.n)),
		UpdateExpression: set, ConditionExpression: aws.String(cond), ExpressionAttributeValues: values,
	}}
}

// holdMoves chooses the purse a hold takes from (first move, its entry
// last) and any transfers into it, or refuses the hold when the account's
// purses together are short. contended: an attempt before conflicted.
func (s *Store) holdMoves(ctx context.Context, userID string, h domain.Hold, cents int64, contended bool) ([]purseMove, error) {
	entry := domain.JournalEntry{Type: domain.EntryHold, Amount: h.Amount, WorkID: h.WorkID, WorkKind: h.Kind,
		Model: h.Model, KeyPrefix: h.KeyPrefix, At: h.CreatedAt}
	if !contended {
		a, err := s.readAccountItem(ctx, userID)
		if err != nil {
			return nil, err
		}
		if a.Balance >= cents && !a.Spread {
			return []purseMove{{p: purseOf(a), entries: []domain.JournalEntry{entry}}}, nil
		}
	}
	ps, err := s.readPurses(ctx, userID)
	if err != nil {
		return nil, err
	}
	if total := sumPurses(ps).balance; total < cents {
		again, err := s.readPurses(ctx, userID)
		if err != nil {
			return nil, err
		}
		if !samePurses(ps, again) {
			return nil, errRebuild
		}
		return nil, s.refusedUnlessHeld(ctx, userID, h.WorkID, &domain.InsufficientCreditsError{
			Required: h.Amount, Available: domain.CentsToCredits(total)})
	}
	var enough []int
	for _, p := range ps {
		if p.totals.balance >= cents {
			enough = append(enough, p.n)
		}
	}
	var target int
	switch {
	case contended && len(enough) < len(ps)/2:
		// Spread: any purse, refilled below when short; a conflict says
		// the few purses with credits are where the writers meet.
		target = rand.IntN(len(ps))
	case len(enough) > 0:
		target = enough[rand.IntN(len(enough))]
	default:
		target = richest(ps, -1)
	}
	if ps[target].totals.balance >= cents {
		return []purseMove{{p: ps[target], entries: []domain.JournalEntry{entry}}}, nil
	}
	// Transfer into the target what it lacks, from the richest purses; under
	// contention from a random purse that has it, half of that purse at
	// least, which spreads the credits without every spreading writer
	// meeting on the richest.
	need := cents - ps[target].totals.balance
	sources := slices.Clone(ps)
	slices.SortFunc(sources, func(x, y purse) int { return int(y.totals.balance - x.totals.balance) })
	if contended {
		var rich []purse
		for _, p := range sources {
			if p.n != target && p.totals.balance >= need {
				rich = append(rich, p)
			}
		}
		if len(rich) > 0 {
			sources = []purse{rich[rand.IntN(len(rich))]}
		}
	}
	var moves []purseMove
	var in int64
	for _, src := range sources {
		if need <= 0 {
			break
		}
		if src.n == target || src.totals.balance == 0 {
			continue
		}
		give := min(src.totals.balance, need)
		if contended && len(moves) == 0 {
			give = min(src.totals.balance, max(need, src.totals.balance/2))
		}
		need -= give
		in += give
		moves = append(moves, purseMove{p: src, entries: []domain.JournalEntry{{Type: domain.EntryTransfer,
			Amount: domain.CentsToCredits(-give), WorkID: h.WorkID, WorkKind: h.Kind, At: h.CreatedAt}}})
	}
	into := purseMove{p: ps[target], entries: []domain.JournalEntry{{Type: domain.EntryTransfer,
		Amount: domain.CentsToCredits(in), WorkID: h.WorkID, WorkKind: h.Kind, At: h.CreatedAt}, entry}}
	return append([]purseMove{into}, moves...), nil
}

// richest is the purse with the largest balance other than except.
func richest(ps []purse, except int) int {
	best := -1
	for _, p := range ps {
		if p.n != except && (best < 0 || p.totals.balance > ps[best].totals.balance) {
			best = p.n
		}
	}
	return best
}

// ledgerBackoff is a random wait after attempt (from 0) failed, up to a
// ceiling that doubles with each attempt (full jitter), so that writers who
// met spread out. The ceiling starts at what the failed attempt took (at
// least ledgerBackoffBase): the writers a conflict says are there take
// about that long each, so the wait adapts to the store's own pace, a few
// milliseconds on DynamoDB, more on a slow stand-in or under load, instead
// of retrying faster than anyone can get through.
func ledgerBackoff(attempt int, took time.Duration) time.Duration {
	ceiling := max(took, ledgerBackoffBase) << min(attempt, 6)
	ceiling = min(ceiling, ledgerBackoffCap)
	return time.Duration(1 + rand.Int64N(int64(ceiling)))
}

// retryableReasons: every item of a cancelled ledger write was either
// fine, in conflict with another transaction, throttled, or failed a
// condition the caller reads again (a purse, an entry, a spend).
func retryableReasons(reasons []types.CancellationReason) bool {
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "None", "", "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "ConditionalCheckFailed":
		default:
			return false
		}
	}
	return true
}
