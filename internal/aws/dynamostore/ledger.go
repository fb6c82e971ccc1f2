package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The ledger table holds, under the account's user_id:
//
//	entry "hold#<work id>"   amount, kind, model, key_prefix, key_ancestors
//	                         (the keys above it, whose spend it counts in),
//	                         created_at,
//	                         state (open, captured, released); open_shard
//	                         while open, which puts it in the sparse
//	                         open-holds index; expires_at once settled
//	                         (the table's TTL)
//	entry "grant#<grant id>" amount, created_at
//	entry "purse#<n>"        a purse's totals and journal position (purses.go)
//	entry "j#<at>#<seq>…"    the journal (journal.go)
//	entry "usage#<day>#…"    the day's usage counters, per model and key (journal.go)
//	entry "spend#<day>#<key>…" what a key's holds took that day (journal.go)
//
// Every ledger operation is one TransactWriteItems of these items, the
// totals of the purses it moves and their journal entries (journaled), so
// Granted = Balance + Held + Captured in every purse after any crash or
// retry, the journal always agrees with the totals, and the account item
// never grows.
const (
	holdPrefix  = "hold#"
	grantPrefix = "grant#"

	holdOpen     = "open"
	holdCaptured = "captured"
	holdReleased = "released"

	// openHoldShards spreads the open holds over this many partitions of
	// the open-holds index (open_shard "0" … "15"), so that no index
	// partition takes every hold's write; the sweeper queries each.
	openHoldShards = 16
	// settledHoldTTL keeps a settled hold (the proof that its work was
	// settled once) this long before the table's TTL deletes it.
	settledHoldTTL = 90 * 24 * time.Hour
)

// Reasons a ledger transaction was cancelled, decoded from the
// TransactionCanceledException's cancellation reasons. Hold answers
// errAlreadyHeld as success (idempotent), Capture and Release answer
// ErrAlreadySettled as "not settled now".
var (
	errAlreadyHeld    = errors.New("the work is already held")
	ErrAlreadySettled = fmt.Errorf("the hold is already settled: %w", domain.ErrConflict)
)

func holdEntry(workID string) string   { return holdPrefix + workID }
func grantEntry(grantID string) string { return grantPrefix + grantID }

func ledgerKey(userID, entry string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"user_id": strAV(userID), "entry": strAV(entry)}
}

// openShard is the open-holds index partition of a work id.
func openShard(workID string) string {
	h := fnv.New32a()
	h.Write([]byte(workID))
	return strconv.Itoa(int(h.Sum32() % openHoldShards))
}

type holdItem struct {
	UserID string `dynamodbav:"user_id"`
	Entry  string `dynamodbav:"entry"`
	// Amount is in cents, as the account's totals.
	Amount    int64  `dynamodbav:"amount"`
	Kind      string `dynamodbav:"kind"`
	Model     string `dynamodbav:"model,omitempty"`
	KeyPrefix string `dynamodbav:"key_prefix,omitempty"`
	// KeyAncestors are the keys above KeyPrefix, nearest first.
	KeyAncestors []string `dynamodbav:"key_ancestors,omitempty"`
	CreatedAt    string   `dynamodbav:"created_at"`
	State        string   `dynamodbav:"state"`
	OpenShard    string   `dynamodbav:"open_shard,omitempty"`
	// Purse is the purse the hold took from (purses.go), which its
	// settlement writes; SpendShares are the keys of its chain without a
	// limit, whose spend it added to that purse's share rather than to
	// the key's own item (spendChain).
	Purse       int      `dynamodbav:"purse,omitempty"`
	SpendShares []string `dynamodbav:"spend_shares,omitempty"`
}

// keyChain is the prefixes of the hold's key and of the keys above it.
func (h holdItem) keyChain() []string {
	if h.KeyPrefix == "" {
		return nil
	}
	return append([]string{h.KeyPrefix}, h.KeyAncestors...)
}

func (h holdItem) hold() (domain.Hold, error) {
	created, err := parseTime(h.CreatedAt)
	if err != nil {
		return domain.Hold{}, err
	}
	out := domain.Hold{WorkID: strings.TrimPrefix(h.Entry, holdPrefix), Kind: domain.WorkKind(h.Kind),
		Amount: domain.CentsToCredits(h.Amount), CreatedAt: created, Model: h.Model, KeyPrefix: h.KeyPrefix}
	for _, p := range h.KeyAncestors {
		out.KeyAncestors = append(out.KeyAncestors, domain.KeyLimit{Prefix: p})
	}
	return out, nil
}

// cancelReasons are the per-item codes of a cancelled transaction (nil if
// err is not a cancellation).
func cancelReasons(err error) []types.CancellationReason {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil
	}
	return tce.CancellationReasons
}

// retryableCancel: cancelled, with no failed condition, only for conflicts
// or throttling, which a later attempt may not meet.
func retryableCancel(err error) bool {
	var conflict *types.TransactionInProgressException
	if errors.As(err, &conflict) {
		return true
	}
	reasons := cancelReasons(err)
	if reasons == nil {
		return false
	}
	retry := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "None", "":
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			retry = true
		default:
			return false
		}
	}
	return retry
}

// conditionFailed reports whether item i of a cancelled transaction failed
// its condition, with the item as it was (ReturnValuesOnConditionCheckFailure
// ALL_OLD; nil when it did not exist).
func conditionFailed(reasons []types.CancellationReason, i int) (bool, map[string]types.AttributeValue) {
	if i >= len(reasons) || aws.ToString(reasons[i].Code) != "ConditionalCheckFailed" {
		return false, nil
	}
	return true, reasons[i].Item
}

func (s *Store) Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (bool, error) {
	cents, err := domain.CreditsToCents(amount)
	if err != nil {
		return false, fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
	}
	errApplied := errors.New("applied before")
	err = s.journaled(ctx, userID, func(bool) (ledgerChange, error) {
		p, err := s.readPurse(ctx, userID, 0)
		if err != nil {
			return ledgerChange{}, err
		}
		now := time.Now()
		return ledgerChange{
			moves: []purseMove{{p: p, entries: []domain.JournalEntry{{Type: domain.EntryGrant, Amount: amount, GrantID: grantID, At: now}}}},
			items: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(s.tables.Ledger),
				Item: map[string]types.AttributeValue{"user_id": strAV(userID), "entry": strAV(grantEntry(grantID)),
					"amount": intAV(cents), "created_at": strAV(formatTime(now))},
				ConditionExpression: aws.String("attribute_not_exists(entry)"),
			}}},
			failed: func(int, map[string]types.AttributeValue) error { return errApplied },
		}, nil
	})
	if errors.Is(err, errApplied) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
	}
	return true, nil
}

// Hold puts the hold, takes its amount from a purse's balance (purses.go)
// and adds it to its key's spend of the day, in one journaled transaction.
// The balance and the key's budget are checked on what was read, which the
// transaction's conditions (the purse's position, the spend's room) keep
// true.
func (s *Store) Hold(ctx context.Context, userID string, h domain.Hold) error {
	cents, err := domain.CreditsToCents(h.Amount)
	if err != nil {
		return fmt.Errorf("hold %s: %w", h.WorkID, err)
	}
	err = s.journaled(ctx, userID, func(contended bool) (ledgerChange, error) {
		moves, err := s.holdMoves(ctx, userID, h, cents, contended)
		if err != nil {
			return ledgerChange{}, err
		}
		purse := moves[0].p.n
		spend, shares, err := s.spendChain(ctx, userID, h, cents, purse)
		if err != nil {
			return ledgerChange{}, s.refusedUnlessHeld(ctx, userID, h.WorkID, err)
		}
		item, err := attributevalue.MarshalMap(holdItem{UserID: userID, Entry: holdEntry(h.WorkID), Amount: cents,
			Kind: string(h.Kind), Model: h.Model, KeyPrefix: h.KeyPrefix, KeyAncestors: h.AncestorPrefixes(),
			CreatedAt: formatTime(h.CreatedAt), State: holdOpen, OpenShard: openShard(h.WorkID),
			Purse: purse, SpendShares: shares})
		if err != nil {
			return ledgerChange{}, err
		}
		return ledgerChange{
			moves: moves,
			items: append([]types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(s.tables.Ledger), Item: item,
				ConditionExpression:                 aws.String("attribute_not_exists(entry)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}}, spend...),
			failed: func(i int, old map[string]types.AttributeValue) error {
				if i > 0 {
					return nil // the key's spend moved since it was read: check again
				}
				var prior holdItem
				if err := attributevalue.UnmarshalMap(old, &prior); err != nil {
					return fmt.Errorf("decode hold: %w", err)
				}
				if prior.State == holdOpen {
					return errAlreadyHeld
				}
				return ErrAlreadySettled
			},
		}, nil
	})
	if err == nil || errors.Is(err, errAlreadyHeld) {
		return nil // holding the same open work again changes nothing
	}
	return fmt.Errorf("hold %s: %w", h.WorkID, err)
}

// refusedUnlessHeld is refusal, unless the work is held already: a retry
// of a hold that went through must not be refused for the balance it took.
func (s *Store) refusedUnlessHeld(ctx context.Context, userID, workID string, refusal error) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, holdEntry(workID)), ConsistentRead: aws.Bool(true),
	})
	switch {
	case err != nil:
		return fmt.Errorf("read hold: %w", err)
	case out.Item == nil:
		return refusal
	}
	var h holdItem
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return fmt.Errorf("decode hold: %w", err)
	}
	if h.State == holdOpen {
		return errAlreadyHeld
	}
	return ErrAlreadySettled
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

// settle reads the hold (for its amount and purse), then in one journaled
// transaction moves it from open to captured or released and its amount
// from its purse's held to captured (adding to the day's usage counters)
// or back to the purse's balance (and to its key's budget of the day it
// was held).
func (s *Store) settle(ctx context.Context, userID, workID string, typ domain.EntryType) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, holdEntry(workID)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("settle %s: %w", workID, err)
	}
	if out.Item == nil {
		// Never held, unless the account itself is missing.
		return false, s.mustExist(ctx, userID)
	}
	var h holdItem
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return false, fmt.Errorf("settle %s: decode hold: %w", workID, err)
	}
	if h.State != holdOpen {
		return false, nil // already settled
	}
	heldAt, err := parseTime(h.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("settle %s: %w", workID, err)
	}
	state := holdReleased
	if typ == domain.EntryCapture {
		state = holdCaptured
	}
	err = s.journaled(ctx, userID, func(contended bool) (ledgerChange, error) {
		if contended { // another settlement may be the one that got in
			out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: aws.String(s.tables.Ledger), Key: ledgerKey(userID, holdEntry(workID)), ConsistentRead: aws.Bool(true),
				ProjectionExpression: aws.String("#st"), ExpressionAttributeNames: map[string]string{"#st": "state"},
			})
			if err != nil {
				return ledgerChange{}, fmt.Errorf("read hold: %w", err)
			}
			if stringAttr(out.Item, "state") != holdOpen {
				return ledgerChange{}, ErrAlreadySettled
			}
		}
		p, err := s.readPurse(ctx, userID, h.Purse)
		if err != nil {
			return ledgerChange{}, err
		}
		now := time.Now()
		change := ledgerChange{
			moves: []purseMove{{p: p, entries: []domain.JournalEntry{{Type: typ, Amount: domain.CentsToCredits(h.Amount), WorkID: workID,
				WorkKind: domain.WorkKind(h.Kind), Model: h.Model, KeyPrefix: h.KeyPrefix, At: now}}}},
			items: []types.TransactWriteItem{{Update: &types.Update{
				TableName:                aws.String(s.tables.Ledger),
				Key:                      ledgerKey(userID, holdEntry(workID)),
				UpdateExpression:         aws.String("SET #st = :settled, settled_at = :now, expires_at = :exp REMOVE open_shard"),
				ConditionExpression:      aws.String("#st = :open AND amount = :amt"),
				ExpressionAttributeNames: map[string]string{"#st": "state"},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":settled": strAV(state), ":open": strAV(holdOpen), ":amt": intAV(h.Amount),
					":now": strAV(formatTime(now)), ":exp": intAV(now.Add(settledHoldTTL).Unix()),
				},
			}}},
			failed: func(i int, _ map[string]types.AttributeValue) error {
				if i == 0 {
					return ErrAlreadySettled
				}
				return nil
			},
		}
		if typ == domain.EntryCapture {
			change.items = append(change.items, s.countUsage(userID, now, h))
		} else {
			change.items = append(change.items, s.giveBackChain(userID, h, heldAt)...)
		}
		return change, nil
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrAlreadySettled):
		return false, nil // settled meanwhile by another caller
	}
	return false, fmt.Errorf("settle %s: %w", workID, err)
}

// mustExist is ErrNotFound when the account is missing.
func (s *Store) mustExist(ctx context.Context, userID string) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Accounts), Key: key("user_id", userID), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("user_id"),
	})
	if err != nil {
		return fmt.Errorf("read account %s: %w", userID, err)
	}
	if out.Item == nil {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	return nil
}

// OpenHolds queries each shard of the sparse open-holds index for holds
// created before the time: only open holds are in it, so the sweeper reads
// what is open and nothing else.
func (s *Store) OpenHolds(ctx context.Context, createdBefore time.Time) ([]domain.OpenHold, error) {
	var out []domain.OpenHold
	for shard := 0; shard < openHoldShards; shard++ {
		p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
			TableName: aws.String(s.tables.Ledger), IndexName: aws.String(IndexOpenHolds),
			KeyConditionExpression: aws.String("open_shard = :shard AND created_at < :before"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":shard": strAV(strconv.Itoa(shard)), ":before": strAV(formatTime(createdBefore)),
			},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("query open holds: %w", err)
			}
			for _, raw := range page.Items {
				var it holdItem
				if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
					return nil, fmt.Errorf("decode hold: %w", err)
				}
				h, err := it.hold()
				if err != nil {
					return nil, fmt.Errorf("hold of %s: %w", it.UserID, err)
				}
				out = append(out, domain.OpenHold{UserID: it.UserID, Hold: h})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// AccountHolds queries the account's hold entries and keeps the open ones
// (administration; no request path reads them).
func (s *Store) AccountHolds(ctx context.Context, userID string) ([]domain.Hold, error) {
	if err := s.mustExist(ctx, userID); err != nil {
		return nil, err
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.Ledger),
		KeyConditionExpression:   aws.String("user_id = :u AND begins_with(entry, :p)"),
		FilterExpression:         aws.String("#st = :open"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(userID), ":p": strAV(holdPrefix), ":open": strAV(holdOpen),
		},
		ConsistentRead: aws.Bool(true),
	})
	var out []domain.Hold
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("holds of %s: %w", userID, err)
		}
		for _, raw := range page.Items {
			var it holdItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("decode hold of %s: %w", userID, err)
			}
			h, err := it.hold()
			if err != nil {
				return nil, err
			}
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}
