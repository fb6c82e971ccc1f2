package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

// The ledger table holds an account's holds and grants, each an item of
// its own under the account's user_id:
//
//	entry "hold#<work id>"   amount, kind, created_at, state (open, captured,
//	                         released); open_shard while open, which puts it
//	                         in the sparse open-holds index; expires_at once
//	                         settled (the table's TTL)
//	entry "grant#<grant id>" amount, created_at
//
// Every ledger operation is one TransactWriteItems of the entry and the
// account's totals, so Granted = Balance + Held + Captured after any crash
// or retry, and the account item never grows.
const (
	holdPrefix  = "hold#"
	grantPrefix = "grant#"

	holdOpen     = "open"
	holdCaptured = "captured"
	holdReleased = "released"

	// OpenHoldShards spreads the open holds over this many partitions of
	// the open-holds index (open_shard "0" … "15"), so that no index
	// partition takes every hold's write; the sweeper queries each.
	OpenHoldShards = 16
	// settledHoldTTL keeps a settled hold (the proof that its work was
	// settled once) this long before the table's TTL deletes it.
	settledHoldTTL = 90 * 24 * time.Hour
	// transactAttempts bounds the retries of a transaction that DynamoDB
	// cancelled for a conflict with another one in flight on its items.
	transactAttempts = 10
)

// Reasons a ledger transaction was cancelled, decoded from the
// TransactionCanceledException's cancellation reasons. Hold answers
// ErrAlreadyHeld as success (idempotent), Capture and Release answer
// ErrAlreadySettled as "not settled now".
var (
	ErrAlreadyHeld    = errors.New("the work is already held")
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
	return strconv.Itoa(int(h.Sum32() % OpenHoldShards))
}

type holdItem struct {
	UserID string `dynamodbav:"user_id"`
	Entry  string `dynamodbav:"entry"`
	// Amount is in cents, as the account's totals.
	Amount    int64  `dynamodbav:"amount"`
	Kind      string `dynamodbav:"kind"`
	CreatedAt string `dynamodbav:"created_at"`
	State     string `dynamodbav:"state"`
	OpenShard string `dynamodbav:"open_shard,omitempty"`
}

func (h holdItem) hold() (domain.Hold, error) {
	created, err := parseTime(h.CreatedAt)
	if err != nil {
		return domain.Hold{}, err
	}
	return domain.Hold{WorkID: strings.TrimPrefix(h.Entry, holdPrefix), Kind: domain.WorkKind(h.Kind),
		Amount: domain.CentsToCredits(h.Amount), CreatedAt: created}, nil
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
		if err := pause(ctx, time.Duration(1+rand.IntN(5*(attempt+1)))*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("transaction kept conflicting over %d attempts: %w", transactAttempts, err)
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

// decodeHoldCancel turns the cancellation of a hold's transaction (item 0:
// the account, item 1: the hold) into the typed error: ErrAlreadyHeld or
// ErrAlreadySettled when the hold exists, ErrNotFound when the account does
// not, an *InsufficientCreditsError when its balance is short.
func decodeHoldCancel(reasons []types.CancellationReason, userID string, amount decimal.Decimal) error {
	if failed, old := conditionFailed(reasons, 1); failed {
		var h holdItem
		if err := attributevalue.UnmarshalMap(old, &h); err != nil {
			return fmt.Errorf("decode hold: %w", err)
		}
		if h.State == holdOpen {
			return ErrAlreadyHeld
		}
		return ErrAlreadySettled
	}
	if failed, old := conditionFailed(reasons, 0); failed {
		if old == nil {
			return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
		}
		var a accountItem
		if err := attributevalue.UnmarshalMap(old, &a); err != nil {
			return fmt.Errorf("decode account %s: %w", userID, err)
		}
		return &domain.InsufficientCreditsError{Required: amount, Available: domain.CentsToCredits(a.Balance)}
	}
	return fmt.Errorf("hold cancelled for reasons %s", reasonCodes(reasons))
}

func reasonCodes(reasons []types.CancellationReason) string {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = aws.ToString(r.Code)
	}
	return strings.Join(codes, ", ")
}

func (s *Store) Grant(ctx context.Context, userID, grantID string, amount decimal.Decimal) (bool, error) {
	cents, err := domain.CreditsToCents(amount)
	if err != nil {
		return false, fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
	}
	err = s.transact(ctx,
		types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.tables.Ledger),
			Item: map[string]types.AttributeValue{"user_id": strAV(userID), "entry": strAV(grantEntry(grantID)),
				"amount": intAV(cents), "created_at": strAV(formatTime(time.Now()))},
			ConditionExpression: aws.String("attribute_not_exists(entry)"),
		}},
		types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(s.tables.Accounts),
			Key:                       key("user_id", userID),
			UpdateExpression:          aws.String("SET balance = balance + :amt, granted = granted + :amt"),
			ConditionExpression:       aws.String("attribute_exists(user_id)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":amt": intAV(cents)},
		}})
	if err == nil {
		return true, nil
	}
	if reasons := cancelReasons(err); reasons != nil {
		if failed, _ := conditionFailed(reasons, 1); failed {
			return false, fmt.Errorf("grant %s: account %s: %w", grantID, userID, domain.ErrNotFound)
		}
		if failed, _ := conditionFailed(reasons, 0); failed {
			return false, nil // applied before
		}
	}
	return false, fmt.Errorf("grant %s to %s: %w", grantID, userID, err)
}

// Hold puts the hold and takes its amount from the balance in one
// transaction: balance >= amount on the account, no such hold yet.
func (s *Store) Hold(ctx context.Context, userID string, h domain.Hold) error {
	cents, err := domain.CreditsToCents(h.Amount)
	if err != nil {
		return fmt.Errorf("hold %s: %w", h.WorkID, err)
	}
	item, err := attributevalue.MarshalMap(holdItem{UserID: userID, Entry: holdEntry(h.WorkID), Amount: cents,
		Kind: string(h.Kind), CreatedAt: formatTime(h.CreatedAt), State: holdOpen, OpenShard: openShard(h.WorkID)})
	if err != nil {
		return fmt.Errorf("hold %s: %w", h.WorkID, err)
	}
	err = s.transact(ctx,
		types.TransactWriteItem{Update: &types.Update{
			TableName:                           aws.String(s.tables.Accounts),
			Key:                                 key("user_id", userID),
			UpdateExpression:                    aws.String("SET balance = balance - :amt, held = held + :amt"),
			ConditionExpression:                 aws.String("attribute_exists(user_id) AND balance >= :amt"),
			ExpressionAttributeValues:           map[string]types.AttributeValue{":amt": intAV(cents)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.tables.Ledger), Item: item,
			ConditionExpression:                 aws.String("attribute_not_exists(entry)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}})
	if err == nil {
		return nil
	}
	if reasons := cancelReasons(err); reasons != nil {
		err = decodeHoldCancel(reasons, userID, h.Amount)
		if errors.Is(err, ErrAlreadyHeld) {
			return nil // holding the same open work again changes nothing
		}
	}
	return fmt.Errorf("hold %s: %w", h.WorkID, err)
}

func (s *Store) Capture(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, true)
}

func (s *Store) Release(ctx context.Context, userID, workID string) (bool, error) {
	return s.settle(ctx, userID, workID, false)
}

// settle reads the hold (for its amount), then in one transaction moves it
// from open to captured or released and its amount from held to captured
// (adding to this month's usage) or back to the balance.
func (s *Store) settle(ctx context.Context, userID, workID string, capture bool) (bool, error) {
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
	state, account := holdReleased, "SET held = held - :amt, balance = balance + :amt"
	names := map[string]string(nil)
	values := map[string]types.AttributeValue{":amt": intAV(h.Amount)}
	if capture {
		month := domain.UsageMonth(time.Now())
		state = holdCaptured
		account = "SET held = held - :amt, captured = captured + :amt, " +
			"#uc = if_not_exists(#uc, :zero) + :amt, #uj = if_not_exists(#uj, :zero) + :one"
		names = map[string]string{"#uc": usageCreditsPrefix + month, "#uj": usageJobsPrefix + month}
		values[":zero"], values[":one"] = intAV(0), intAV(1)
	}
	now := time.Now()
	err = s.transact(ctx,
		types.TransactWriteItem{Update: &types.Update{
			TableName:                aws.String(s.tables.Ledger),
			Key:                      ledgerKey(userID, holdEntry(workID)),
			UpdateExpression:         aws.String("SET #st = :settled, settled_at = :now, expires_at = :exp REMOVE open_shard"),
			ConditionExpression:      aws.String("#st = :open AND amount = :amt"),
			ExpressionAttributeNames: map[string]string{"#st": "state"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":settled": strAV(state), ":open": strAV(holdOpen), ":amt": values[":amt"],
				":now": strAV(formatTime(now)), ":exp": intAV(now.Add(settledHoldTTL).Unix()),
			},
		}},
		types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(s.tables.Accounts),
			Key:                       key("user_id", userID),
			UpdateExpression:          aws.String(account),
			ConditionExpression:       aws.String("attribute_exists(user_id)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		}})
	if err == nil {
		return true, nil
	}
	if reasons := cancelReasons(err); reasons != nil {
		if failed, _ := conditionFailed(reasons, 0); failed {
			return false, nil // settled meanwhile by another caller
		}
		if failed, _ := conditionFailed(reasons, 1); failed {
			return false, fmt.Errorf("settle %s: account %s: %w", workID, userID, domain.ErrNotFound)
		}
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
	for shard := 0; shard < OpenHoldShards; shard++ {
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
