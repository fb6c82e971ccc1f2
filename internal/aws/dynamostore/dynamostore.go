// Package dynamostore is the DynamoDB adapter of the store. The ledger keeps
// each hold and grant as an item of its own, written in one
// TransactWriteItems with the account's totals, so that the account item
// stays the same size however much work is in flight; the providers' slots
// are an item per holder or waiter and a counter per upstream. Everything
// else is single-item conditional writes.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
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

var _ store.Store = (*Store)(nil)

// API is the part of the DynamoDB client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Store is the DynamoDB adapter.
type Store struct {
	db     API
	tables Tables
	// budget bounds the retries of one ledger write (purses.go).
	budget time.Duration
}

// New wires the adapter to a client and a set of tables.
func New(db API, tables Tables, opts ...Option) *Store {
	s := &Store{db: db, tables: tables, budget: ledgerBudget}
	for _, o := range opts {
		o(s)
	}
	s.db = conflictRetrying{API: db, budget: s.budget}
	return s
}

// Option configures a Store.
type Option func(*Store)

// WithLedgerBudget sets how long one ledger write may retry conflicts
// before it fails with domain.ErrBusy (ledgerBudget by default; zero keeps
// it). Only a stand-in much slower than DynamoDB needs another: one that
// answers a request at a time makes each of N clients wait N requests.
func WithLedgerBudget(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.budget = d
		}
	}
}

const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

func num(d decimal.Decimal) attributevalue.Number { return attributevalue.Number(d.String()) }

func dec(n attributevalue.Number) (decimal.Decimal, error) {
	if n == "" {
		return decimal.Zero, nil
	}
	d, err := decimal.NewFromString(string(n))
	if err != nil {
		return decimal.Zero, fmt.Errorf("stored number %q: %w", n, err)
	}
	return d, nil
}

func numAV(d decimal.Decimal) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: d.String()}
}
func intAV(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// stringAttr is an item's string attribute, "" when it has none.
func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
func key(name, value string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{name: strAV(value)}
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// updateProcessing applies an update only while the record is processing,
// and says whether it was missing (ErrNotFound) or already final (ErrConflict).
// extraNames are placeholder/name pairs beyond the reserved words.
func (s *Store) updateProcessing(ctx context.Context, table, keyName, keyValue, update string, values map[string]types.AttributeValue, extraNames ...string) error {
	return s.updateIf(ctx, table, keyName, keyValue, "", update, values, extraNames...)
}

// updateOutcome is updateProcessing for a record's terminal outcome: a
// cancel is also refused (domain.ErrFinishing) once the record is
// finishing, in the same conditional write.
func (s *Store) updateOutcome(ctx context.Context, table, keyName, keyValue string, status domain.Status, update string, values map[string]types.AttributeValue) error {
	cond := ""
	if status == domain.StatusCanceled {
		cond = " AND attribute_not_exists(finishing)"
	}
	return s.updateIf(ctx, table, keyName, keyValue, cond, update, values)
}

func (s *Store) updateIf(ctx context.Context, table, keyName, keyValue, cond, update string, values map[string]types.AttributeValue, extraNames ...string) error {
	values[":processing"] = strAV(string(domain.StatusProcessing))
	names := namesIn(update)
	for i := 0; i+1 < len(extraNames); i += 2 {
		names[extraNames[i]] = extraNames[i+1]
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       key(keyName, keyValue),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("#s = :processing" + cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("update %s %s: %w", table, keyValue, err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: key(keyName, keyValue), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#s, finishing"), ExpressionAttributeNames: map[string]string{"#s": "status"},
	})
	if err != nil {
		return fmt.Errorf("update %s %s: %w", table, keyValue, err)
	}
	if out.Item == nil {
		return fmt.Errorf("update %s %s: %w", table, keyValue, domain.ErrNotFound)
	}
	status := stringAttr(out.Item, "status")
	if _, finishing := out.Item["finishing"]; finishing && domain.Status(status) == domain.StatusProcessing {
		return fmt.Errorf("update %s %s: its outputs are being written: %w", table, keyValue, domain.ErrFinishing)
	}
	return fmt.Errorf("update %s %s: status is %s: %w", table, keyValue, status, domain.ErrConflict)
}

// namesIn maps the placeholders of reserved words that the expression uses;
// DynamoDB refuses names that an expression does not use.
func namesIn(expr string) map[string]string {
	names := map[string]string{"#s": "status"}
	if strings.Contains(expr, "#e") {
		names["#e"] = "error"
	}
	return names
}

// pause waits d, or until ctx ends (its error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
