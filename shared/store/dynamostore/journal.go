package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// The journal's items in the ledger table:
//
//	entry "j#<at>#<seq>"       seq, at, type, amount, the account's balance,
//	                           held, captured and granted after it, work_id,
//	                           work_kind, grant_id, model, key_prefix; <at> is
//	                           the fixed-width time, <seq> 12 digits, so the
//	                           entries sort by time and a time range is a key
//	                           range
//	entry "usage#<day>"        "c#<model>#<key>" (cents), "g#…" and "v#…"
//	                           (generations and videos) added by captures
//	entry "spend#<day>#<key>"  spent (cents): the key's holds of the day less
//	                           what was released or refunded; expires_at
//
// The account item carries jseq and jat, the seq and time of its last entry.
// Every ledger write sets them and is conditioned on jseq being what was
// read just before, so the writes of an account are serialized, the entry's
// "after" totals are exact, and the seqs have no gap.
const (
	journalPrefix = "j#"
	usagePrefix   = "usage#"
	spendPrefix   = "spend#"
	// journalEnd sorts after every journal entry ('$' follows '#').
	journalEnd = "j$"

	// spendTTL keeps a key's spend item past its day, for the keys list.
	spendTTL = 3 * 24 * time.Hour

	// ledgerAttempts bounds the attempts of one ledger write that other
	// writes of the same account kept overtaking (each attempt rereads).
	ledgerAttempts = 40
	// transactAttempts bounds the retries of a transaction that DynamoDB
	// cancelled for a conflict with another one in flight on its items.
	transactAttempts = 10
)

func journalEntryKey(at time.Time, seq int64) string {
	return fmt.Sprintf("%s%s#%012d", journalPrefix, formatTime(at), seq)
}

// ledgerChange is one ledger operation: its journal entry (type, amount and
// what it names; journaled sets the seq, time and totals), the items it
// writes besides the account and the entry, more SET clauses of the account
// item, and what a failed condition of item i of items means.
type ledgerChange struct {
	entry   domain.JournalEntry
	items   []types.TransactWriteItem
	account string
	names   map[string]string
	values  map[string]types.AttributeValue
	failed  func(i int, old map[string]types.AttributeValue) error
}

// journaled runs one ledger write: it reads the account, lets build make
// the change from it (or refuse), and writes the account's new totals and
// journal position, the change's items and the journal entry in one
// TransactWriteItems conditioned on the position read. When another write
// of the account got in first, it reads again and rebuilds.
func (s *Store) journaled(ctx context.Context, userID string, build func(accountItem) (ledgerChange, error)) error {
	for attempt := 0; attempt < ledgerAttempts; attempt++ {
		a, err := s.readAccountItem(ctx, userID)
		if err != nil {
			return err
		}
		change, err := build(a)
		if err != nil {
			return err
		}
		items, err := s.journalItems(userID, a, change)
		if err != nil {
			return err
		}
		err = s.transact(ctx, items...)
		if err == nil {
			return nil
		}
		reasons := cancelReasons(err)
		if reasons == nil {
			return err
		}
		for i := range change.items {
			if failed, old := conditionFailed(reasons, 1+i); failed {
				return change.failed(i, old)
			}
		}
		if failed, _ := conditionFailed(reasons, 0); !failed {
			return fmt.Errorf("ledger write cancelled for reasons %s", reasonCodes(reasons))
		}
		// Another write moved the journal on: read it again.
		if err := pause(ctx, retryWait(attempt)); err != nil {
			return err
		}
	}
	return fmt.Errorf("account %s: other ledger writes kept getting in first over %d attempts", userID, ledgerAttempts)
}

// journalItems are the transaction of a change: the account (item 0), the
// change's items, then the entry (after an opening entry for an account
// whose totals predate its journal).
func (s *Store) journalItems(userID string, a accountItem, change ledgerChange) ([]types.TransactWriteItem, error) {
	before := centsTotals{balance: a.Balance, held: a.Held, captured: a.Captured, granted: a.Granted}
	e := change.entry
	e.Seq = a.JournalSeq
	var entries []domain.JournalEntry
	if e.Seq == 0 && before != (centsTotals{}) {
		e.Seq = 1
		entries = append(entries, domain.JournalEntry{Seq: 1, Type: domain.EntryOpening, After: before.credits(), At: e.At})
	}
	if last, err := parseTime(a.JournalAt); err == nil && e.At.Before(last) {
		e.At = last // time order is seq order
	}
	e.Seq++
	e.After = before.credits().Apply(e.Type, e.Amount)
	entries = append(entries, e)
	after := centsOf(e.After)
	values := map[string]types.AttributeValue{
		":b": intAV(after.balance), ":h": intAV(after.held), ":c": intAV(after.captured), ":g": intAV(after.granted),
		":seq": intAV(e.Seq), ":at": strAV(formatTime(e.At)), ":read": intAV(a.JournalSeq),
	}
	for k, v := range change.values {
		values[k] = v
	}
	cond := "jseq = :read"
	if a.JournalSeq == 0 {
		cond = "attribute_exists(user_id) AND (attribute_not_exists(jseq) OR jseq = :read)"
	}
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName: aws.String(s.tables.Accounts), Key: key("user_id", userID),
		UpdateExpression:          aws.String("SET balance = :b, held = :h, captured = :c, granted = :g, jseq = :seq, jat = :at" + change.account),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  change.names,
		ExpressionAttributeValues: values,
	}}}
	items = append(items, change.items...)
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

// transact runs one TransactWriteItems, again after a short random wait when
// DynamoDB cancelled it only for a conflict with another transaction (or
// throttling). A cancellation for a failed condition is returned as the
// *types.TransactionCanceledException for the caller to decode.
func (s *Store) transact(ctx context.Context, items ...types.TransactWriteItem) error {
	var err error
	for attempt := 0; attempt < transactAttempts; attempt++ {
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil || !retryableCancel(err) {
			return err
		}
		if err := pause(ctx, retryWait(attempt)); err != nil {
			return err
		}
	}
	return fmt.Errorf("transaction kept conflicting over %d attempts: %w", transactAttempts, err)
}

// retryWait is a random few milliseconds, more after each attempt
// (capped), so that writers who met spread out.
func retryWait(attempt int) time.Duration {
	return time.Duration(1+rand.IntN(min(5*(attempt+1), 50))) * time.Millisecond
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
	item, err := attributevalue.MarshalMap(entryRecord{UserID: userID, Entry: journalEntryKey(e.At, e.Seq), Seq: e.Seq,
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
	return domain.JournalEntry{Seq: r.Seq, Type: domain.EntryType(r.Type), Amount: domain.CentsToCredits(r.Amount),
		After:  centsTotals{balance: r.Balance, held: r.Held, captured: r.Captured, granted: r.Granted}.credits(),
		WorkID: r.WorkID, WorkKind: domain.WorkKind(r.WorkKind), GrantID: r.GrantID, Model: r.Model, KeyPrefix: r.KeyPrefix, At: at}, nil
}

func spendEntry(day, prefix string) string { return spendPrefix + day + "#" + prefix }

// keySpent is the key's spend of the day in cents (0 when none), read
// consistently: the journal's condition keeps it true until the write.
func (s *Store) keySpent(ctx context.Context, userID, day, prefix string) (int64, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, spendEntry(day, prefix)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("key %s spend: %w", prefix, err)
	}
	var it struct {
		Spent int64 `dynamodbav:"spent"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return 0, fmt.Errorf("key %s spend: %w", prefix, err)
	}
	return it.Spent, nil
}

func (s *Store) setSpend(userID, day, prefix string, cents int64) types.TransactWriteItem {
	dayStart, _ := time.Parse(time.DateOnly, day)
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, spendEntry(day, prefix)),
		UpdateExpression: aws.String("SET spent = :s, expires_at = :exp"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": intAV(cents), ":exp": intAV(dayStart.Add(spendTTL).Unix()),
		},
	}}
}

// countUsage adds a capture to the counters of its day, model and key.
func (s *Store) countUsage(userID string, at time.Time, h holdItem) types.TransactWriteItem {
	dim := "#" + h.Model + "#" + h.KeyPrefix
	gens, videos := domain.WorkKind(h.Kind).Counts()
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, usagePrefix+domain.UsageDay(at)),
		UpdateExpression:         aws.String("ADD #c :c, #g :g, #v :v"),
		ExpressionAttributeNames: map[string]string{"#c": "c" + dim, "#g": "g" + dim, "#v": "v" + dim},
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
	at, seq, after, err := store.ParseJournalCursor(q.Cursor)
	if err != nil {
		return store.Page[domain.JournalEntry]{}, err
	}
	if after {
		in.ExclusiveStartKey = ledgerKey(q.UserID, journalEntryKey(at, seq))
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
			":u": strAV(userID), ":lo": strAV(usagePrefix + fromDay), ":hi": strAV(usagePrefix + toDay),
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
	day := strings.TrimPrefix(head.Entry, usagePrefix)
	byDim := map[string]*domain.UsageCount{}
	var dims []string
	for name, av := range raw {
		kind, dim, ok := strings.Cut(name, "#")
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
			out[strings.TrimPrefix(it.Entry, spendPrefix+day+"#")] = domain.CentsToCredits(it.Spent)
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
