package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// The journal's items in the ledger table:
//
//	entry "j#<at>#<seq>[#<purse>]"  purse (absent: 0), seq, at, type, amount,
//	                           the purse's balance, held, captured and
//	                           granted after it, work_id, work_kind,
//	                           grant_id, model, key_prefix; <at> is the
//	                           fixed-width time, <seq> 12 digits, so the
//	                           entries sort by time and a time range is a
//	                           key range
//	entry "usage#<day>#<model>#<key>"  c (cents), g and v (generations
//	                           and videos) added by captures: one item per
//	                           day, model and key, so none grows with the
//	                           pairs an account uses (a day's usage is a
//	                           key range). Items written before hold
//	                           "c#<model>#<key>", "g#…" and "v#…" in one
//	                           "usage#<day>" item, still read.
//	entry "spend#<day>#<key>"  spent (cents): a limited key's holds of the
//	                           day less what was released or refunded;
//	                           expires_at. "spend#<day>#<key>#<purse>": a
//	                           purse's share of the same, for a key
//	                           without a limit
//
// Each purse (purses.go) carries jseq and jat, the seq and time of its last
// entry. Every ledger write sets them and is conditioned on jseq being what
// was read just before, so the writes of a purse are serialized, an entry's
// "after" totals are exact, and a purse's seqs have no gap.
const (
	journalPrefix = "j#"
	usagePrefix   = "usage#"
	spendPrefix   = "spend#"
	// journalEnd sorts after every journal entry ('$' follows '#').
	journalEnd = "j$"

	// spendTTL keeps a key's spend item past its day, for the keys list.
	spendTTL = 3 * 24 * time.Hour
)

// journalEntryKey is an entry's sort key: purse 0's as before purses, the
// others' with the purse after the seq (unique, and still in time order).
func journalEntryKey(at time.Time, purse int, seq int64) string {
	if purse == 0 {
		return fmt.Sprintf("%s%s#%012d", journalPrefix, formatTime(at), seq)
	}
	return fmt.Sprintf("%s%s#%012d#%d", journalPrefix, formatTime(at), seq, purse)
}

// ledgerChange is one ledger operation: the purses it moves with their
// entries (journaled numbers them and sets their totals), the items it
// writes besides, and what a failed condition of items[i] means (nil: the
// item moved since it was read, and the write is built again).
type ledgerChange struct {
	moves  []purseMove
	items  []types.TransactWriteItem
	failed func(i int, old map[string]types.AttributeValue) error
}

// journaled runs one ledger write: build reads what it needs and makes the
// change (or refuses), and the change's items, its purses' new totals and
// positions and its entries go in one TransactWriteItems conditioned on
// the positions read. When another write got in first or DynamoDB
// cancelled the transaction for a conflict, it builds again (contended)
// after a jittered backoff, within the store's budget, then domain.ErrBusy.
func (s *Store) journaled(ctx context.Context, userID string, build func(contended bool) (ledgerChange, error)) error {
	start := time.Now()
	contended := false
	for attempt := 0; ; attempt++ {
		began := time.Now()
		change, err := build(contended)
		if err == nil {
			err = s.writeChange(ctx, userID, change)
		}
		if err == nil || !errors.Is(err, errRebuild) {
			return err
		}
		contended = true
		wait := ledgerBackoff(attempt, time.Since(began))
		if time.Since(start)+wait > s.budget {
			return fmt.Errorf("account %s: other ledger writes kept conflicting for %s (%d attempts): %w",
				userID, s.budget, attempt+1, domain.ErrBusy)
		}
		if err := pause(ctx, wait); err != nil {
			return err
		}
	}
}

// writeChange writes a change in one transaction; errRebuild when it may be
// built and tried again.
func (s *Store) writeChange(ctx context.Context, userID string, change ledgerChange) error {
	items := slices.Clone(change.items)
	for _, m := range change.moves {
		mi, err := s.moveItems(userID, m)
		if err != nil {
			return err
		}
		items = append(items, mi...)
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	var inProgress *types.TransactionInProgressException
	if errors.As(err, &inProgress) {
		return errRebuild
	}
	reasons := cancelReasons(err)
	if reasons == nil {
		return err
	}
	for i := range change.items {
		if failed, old := conditionFailed(reasons, i); failed && change.failed != nil {
			if ferr := change.failed(i, old); ferr != nil {
				return ferr
			}
		}
	}
	if !retryableReasons(reasons) {
		return fmt.Errorf("ledger write cancelled for reasons %s", reasonCodes(reasons))
	}
	return errRebuild
}

// readAccountItem is a consistent read of the account item.
func (s *Store) readAccountItem(ctx context.Context, userID string) (accountItem, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Accounts), Key: key("user_id", userID), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return accountItem{}, fmt.Errorf("read account %s: %w", userID, err)
	}
	if out.Item == nil {
		return accountItem{}, fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	var a accountItem
	if err := attributevalue.UnmarshalMap(out.Item, &a); err != nil {
		return accountItem{}, fmt.Errorf("decode account %s: %w", userID, err)
	}
	return a, nil
}

// transact runs one TransactWriteItems, again after a jittered backoff
// while DynamoDB cancels it only for a conflict with another transaction
// (or throttling), within the store's budget, then domain.ErrBusy. A
// cancellation for a failed condition is returned as the
// *types.TransactionCanceledException for the caller to decode.
func (s *Store) transact(ctx context.Context, items ...types.TransactWriteItem) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		began := time.Now()
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil || !retryableCancel(err) {
			return err
		}
		wait := ledgerBackoff(attempt, time.Since(began))
		if time.Since(start)+wait > s.budget {
			return fmt.Errorf("transaction kept conflicting for %s (%d attempts): %w: %w", s.budget, attempt+1, domain.ErrBusy, err)
		}
		if err := pause(ctx, wait); err != nil {
			return err
		}
	}
}

func reasonCodes(reasons []types.CancellationReason) string {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	return strings.Join(codes, ", ")
}

// centsTotals are an account's totals as its item keeps them.
type centsTotals struct{ balance, held, captured, granted int64 }

func (c centsTotals) credits() domain.Totals {
	return domain.Totals{Balance: domain.CentsToCredits(c.balance), Held: domain.CentsToCredits(c.held),
		Captured: domain.CentsToCredits(c.captured), Granted: domain.CentsToCredits(c.granted)}
}

// centsOf is the inverse of credits: the totals are whole cents, as every
// amount the ledger moves is.
func centsOf(t domain.Totals) centsTotals {
	cents := func(d decimal.Decimal) int64 { return d.Shift(2).IntPart() }
	return centsTotals{balance: cents(t.Balance), held: cents(t.Held), captured: cents(t.Captured), granted: cents(t.Granted)}
}

type entryRecord struct {
	UserID    string `dynamodbav:"user_id"`
	Entry     string `dynamodbav:"entry"`
	Purse     int    `dynamodbav:"purse,omitempty"`
	Seq       int64  `dynamodbav:"seq"`
	At        string `dynamodbav:"at"`
	Type      string `dynamodbav:"type"`
	Amount    int64  `dynamodbav:"amount"`
	Balance   int64  `dynamodbav:"balance"`
	Held      int64  `dynamodbav:"held"`
	Captured  int64  `dynamodbav:"captured"`
	Granted   int64  `dynamodbav:"granted"`
	WorkID    string `dynamodbav:"work_id,omitempty"`
	WorkKind  string `dynamodbav:"work_kind,omitempty"`
	GrantID   string `dynamodbav:"grant_id,omitempty"`
	Model     string `dynamodbav:"model,omitempty"`
	KeyPrefix string `dynamodbav:"key_prefix,omitempty"`
}

func entryItem(userID string, e domain.JournalEntry) (map[string]types.AttributeValue, error) {
	after := centsOf(e.After)
	item, err := attributevalue.MarshalMap(entryRecord{UserID: userID, Entry: journalEntryKey(e.At, e.Purse, e.Seq), Purse: e.Purse, Seq: e.Seq,
		At: formatTime(e.At), Type: string(e.Type), Amount: e.Amount.Shift(2).IntPart(),
		Balance: after.balance, Held: after.held, Captured: after.captured, Granted: after.granted,
		WorkID: e.WorkID, WorkKind: string(e.WorkKind), GrantID: e.GrantID, Model: e.Model, KeyPrefix: e.KeyPrefix})
	if err != nil {
		return nil, fmt.Errorf("journal entry %d: %w", e.Seq, err)
	}
	return item, nil
}

func (r entryRecord) entry() (domain.JournalEntry, error) {
	at, err := parseTime(r.At)
	if err != nil {
		return domain.JournalEntry{}, err
	}
	return domain.JournalEntry{Purse: r.Purse, Seq: r.Seq, Type: domain.EntryType(r.Type), Amount: domain.CentsToCredits(r.Amount),
		After:  centsTotals{balance: r.Balance, held: r.Held, captured: r.Captured, granted: r.Granted}.credits(),
		WorkID: r.WorkID, WorkKind: domain.WorkKind(r.WorkKind), GrantID: r.GrantID, Model: r.Model, KeyPrefix: r.KeyPrefix, At: at}, nil
}

func spendEntry(day, prefix string) string { return spendPrefix + day + "#" + prefix }

// spendShareEntry is a purse's share of a key's spend of the day.
func spendShareEntry(day, prefix string, purse int) string {
	return spendEntry(day, prefix) + "#" + strconv.Itoa(purse)
}

// keySpent is the key's spend of the day in cents, read consistently in
// one Query: its own item's (own) and, with the purses' shares of it,
// the whole (0 when none).
func (s *Store) keySpent(ctx context.Context, userID, day, prefix string) (own, total int64, err error) {
	entry := spendEntry(day, prefix)
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND begins_with(entry, :e)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(userID), ":e": strAV(entry),
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, 0, fmt.Errorf("key %s spend: %w", prefix, err)
	}
	for _, raw := range out.Items {
		var it struct {
			Entry string `dynamodbav:"entry"`
			Spent int64  `dynamodbav:"spent"`
		}
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			return 0, 0, fmt.Errorf("key %s spend: %w", prefix, err)
		}
		switch {
		case it.Entry == entry:
			own += it.Spent
			total += it.Spent
		case strings.HasPrefix(it.Entry, entry+"#"):
			total += it.Spent
		}
	}
	return own, total, nil
}

// spendChain is the writes that add a hold of cents to the day's spend of
// its key and of every key above it (domain.Hold.KeyChain), once their
// limits were checked on what they spent (domain.CheckKeyBudget), and the
// prefixes of the chain's keys without a limit, whose spend went to
// purse's share (the hold records them so that its settlement gives back
// to the same items). None for a hold no key made.
//
// A key with a limit adds to its own item, conditioned on that item
// leaving room for the hold beside the shares read, so each limit of the
// chain is kept exactly although the account's holds write different
// purses (the holds of one limited key do queue on its item). A key
// without a limit has nothing to check, and a burst of its holds writes as
// many share items as there are purses.
func (s *Store) spendChain(ctx context.Context, userID string, h domain.Hold, cents int64, purse int) ([]types.TransactWriteItem, []string, error) {
	chain := h.KeyChain()
	day := domain.UsageDay(h.CreatedAt)
	spent := make([]decimal.Decimal, len(chain))
	items := make([]types.TransactWriteItem, 0, len(chain))
	var shares []string
	for i, k := range chain {
		limit, err := domain.CreditsToCents(k.DailyCreditLimit)
		if err != nil {
			return nil, nil, err
		}
		if limit <= 0 {
			items = append(items, types.TransactWriteItem{Update: s.addSpend(userID, day, spendShareEntry(day, k.Prefix, purse), cents)})
			shares = append(shares, k.Prefix)
			continue
		}
		own, total, err := s.keySpent(ctx, userID, day, k.Prefix)
		if err != nil {
			return nil, nil, err
		}
		spent[i] = domain.CentsToCredits(total)
		u := s.addSpend(userID, day, spendEntry(day, k.Prefix), cents)
		u.ConditionExpression = aws.String("attribute_not_exists(spent) OR spent <= :room")
		u.ExpressionAttributeValues[":room"] = intAV(limit - cents - (total - own))
		items = append(items, types.TransactWriteItem{Update: u})
	}
	if err := domain.CheckKeyBudget(h, spent); err != nil {
		return nil, nil, err
	}
	return items, shares, nil
}

// giveBackChain is the writes that take a released or refunded hold back
// off the spend, on the day it was held, of the keys it counted against:
// from the items spendChain added it to.
func (s *Store) giveBackChain(userID string, h holdItem, heldAt time.Time) []types.TransactWriteItem {
	day := domain.UsageDay(heldAt)
	var items []types.TransactWriteItem
	for _, p := range h.keyChain() {
		entry := spendEntry(day, p)
		if slices.Contains(h.SpendShares, p) {
			entry = spendShareEntry(day, p, h.Purse)
		}
		items = append(items, types.TransactWriteItem{Update: s.addSpend(userID, day, entry, -h.Amount)})
	}
	return items
}

// addSpend adds cents (negative: gives them back) to a spend item of the
// day, which expires spendTTL after the day began.
func (s *Store) addSpend(userID, day, entry string, cents int64) *types.Update {
	dayStart, _ := time.Parse(time.DateOnly, day)
	return &types.Update{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, entry),
		UpdateExpression: aws.String("ADD spent :s SET expires_at = :exp"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": intAV(cents), ":exp": intAV(dayStart.Add(spendTTL).Unix()),
		},
	}
}

// usageEntry is the sort key of the usage counters of a day, model and key.
func usageEntry(day, model, keyPrefix string) string {
	return usagePrefix + day + "#" + model + "#" + keyPrefix
}

// countUsage adds a capture to the counters of its day, model and key.
func (s *Store) countUsage(userID string, at time.Time, h holdItem) types.TransactWriteItem {
	gens, videos := domain.WorkKind(h.Kind).Counts()
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, usageEntry(domain.UsageDay(at), h.Model, h.KeyPrefix)),
		UpdateExpression:         aws.String("ADD #c :c, #g :g, #v :v"),
		ExpressionAttributeNames: map[string]string{"#c": "c", "#g": "g", "#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": intAV(h.Amount), ":g": intAV(int64(gens)), ":v": intAV(int64(videos)),
		},
	}}
}

// JournalEntries queries one window of the account's entries, newest
// first, over the key range of the time bounds (q.Window() entries: the
// page's limit, or store.ExamineLimit with a type or work filter), then
// applies the filters to them: one Query whatever the account's history.
// The filters are applied here rather than as a FilterExpression, which
// would cost the same read units, so that the window's next entry tells
// whether more follow, as in the embedded store.
func (s *Store) JournalEntries(ctx context.Context, q store.JournalQuery) (store.Page[domain.JournalEntry], error) {
	lo, hi := journalPrefix, journalEnd
	if !q.From.IsZero() {
		lo = journalPrefix + formatTime(q.From)
	}
	if !q.To.IsZero() {
		hi = journalPrefix + formatTime(q.To) // entries at To sort after it
	}
	window := q.Window()
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND entry BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(q.UserID), ":lo": strAV(lo), ":hi": strAV(hi),
		},
		ScanIndexForward: aws.Bool(false),
		ConsistentRead:   aws.Bool(true),
		Limit:            aws.Int32(int32(window + 1)),
	}
	at, purse, seq, after, err := store.ParseJournalPosition(q.Cursor)
	if err != nil {
		return store.Page[domain.JournalEntry]{}, err
	}
	if after {
		in.ExclusiveStartKey = ledgerKey(q.UserID, journalEntryKey(at, purse, seq))
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return store.Page[domain.JournalEntry]{}, fmt.Errorf("journal of %s: %w", q.UserID, err)
	}
	raws, more := out.Items, out.LastEvaluatedKey != nil
	if len(raws) == 0 {
		return store.Page[domain.JournalEntry]{}, nil
	}
	if len(raws) > window {
		raws, more = raws[:window], true
	}
	var (
		matched []domain.JournalEntry
		last    domain.JournalEntry
	)
	for _, raw := range raws {
		var r entryRecord
		if err := attributevalue.UnmarshalMap(raw, &r); err != nil {
			return store.Page[domain.JournalEntry]{}, fmt.Errorf("decode journal of %s: %w", q.UserID, err)
		}
		if last, err = r.entry(); err != nil {
			return store.Page[domain.JournalEntry]{}, err
		}
		if q.Matches(last) {
			matched = append(matched, last)
		}
	}
	return store.WindowPage(matched, q.Limit, store.JournalCursorOf, store.JournalCursorOf(last), more), nil
}

func (s *Store) UsageCounts(ctx context.Context, userID, fromDay, toDay string) ([]domain.UsageCount, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND entry BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			// "$" sorts after "#": the last day's per-model items too.
			":u": strAV(userID), ":lo": strAV(usagePrefix + fromDay), ":hi": strAV(usagePrefix + toDay + "$"),
		},
	})
	var out []domain.UsageCount
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("usage of %s: %w", userID, err)
		}
		for _, raw := range page.Items {
			counts, err := usageCountsOf(raw)
			if err != nil {
				return nil, fmt.Errorf("usage of %s: %w", userID, err)
			}
			out = append(out, counts...)
		}
	}
	return out, nil
}

// usageCountsOf reads a usage item's counters, one UsageCount per model and
// key, in a stable order.
func usageCountsOf(raw map[string]types.AttributeValue) ([]domain.UsageCount, error) {
	var head struct {
		Entry string `dynamodbav:"entry"`
	}
	if err := attributevalue.UnmarshalMap(raw, &head); err != nil {
		return nil, err
	}
	day, itemDim, perPair := strings.Cut(strings.TrimPrefix(head.Entry, usagePrefix), "#")
	byDim := map[string]*domain.UsageCount{}
	var dims []string
	for name, av := range raw {
		// One pair's item: "c", "g", "v"; an older day item:
		// "c#<model>#<key>", ...
		kind, dim, ok := name, itemDim, perPair
		if !perPair {
			kind, dim, ok = strings.Cut(name, "#")
		}
		if !ok || (kind != "c" && kind != "g" && kind != "v") {
			continue
		}
		var n int64
		if err := attributevalue.Unmarshal(av, &n); err != nil {
			return nil, fmt.Errorf("counter %s: %w", name, err)
		}
		u := byDim[dim]
		if u == nil {
			model, prefix, _ := strings.Cut(dim, "#")
			u = &domain.UsageCount{Day: day, Model: model, KeyPrefix: prefix}
			byDim[dim] = u
			dims = append(dims, dim)
		}
		switch kind {
		case "c":
			u.Credits = domain.CentsToCredits(n)
		case "g":
			u.Generations = int(n)
		case "v":
			u.Videos = int(n)
		}
	}
	slices.Sort(dims)
	out := make([]domain.UsageCount, 0, len(dims))
	for _, d := range dims {
		out = append(out, *byDim[d])
	}
	return out, nil
}

func (s *Store) KeySpend(ctx context.Context, userID, day string) (map[string]decimal.Decimal, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND begins_with(entry, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(userID), ":p": strAV(spendPrefix + day + "#"),
		},
	})
	out := map[string]decimal.Decimal{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("key spend of %s: %w", userID, err)
		}
		for _, raw := range page.Items {
			var it struct {
				Entry string `dynamodbav:"entry"`
				Spent int64  `dynamodbav:"spent"`
			}
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("key spend of %s: %w", userID, err)
			}
			// The key's own item and the purses' shares ("<key>#<purse>").
			prefix, _, _ := strings.Cut(strings.TrimPrefix(it.Entry, spendPrefix+day+"#"), "#")
			out[prefix] = out[prefix].Add(domain.CentsToCredits(it.Spent))
		}
	}
	return out, nil
}

func (s *Store) AccountIDs(ctx context.Context) ([]string, error) {
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName: aws.String(s.tables.Accounts), ProjectionExpression: aws.String("user_id"),
	})
	var ids []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list accounts: %w", err)
		}
		for _, raw := range page.Items {
			var it struct {
				UserID string `dynamodbav:"user_id"`
			}
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("list accounts: %w", err)
			}
			ids = append(ids, it.UserID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
