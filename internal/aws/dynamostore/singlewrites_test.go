package dynamostore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// inFlight refuses the first refusals single writes with
// TransactionConflictException, as DynamoDB does while a transaction has
// the item in flight (negative: every one), and writes nothing for them.
type inFlight struct {
	dynamostore.API
	refusals atomic.Int64
	refused  atomic.Int64
}

func (f *inFlight) refuse() bool {
	if f.refusals.Load() >= 0 && f.refused.Load() >= f.refusals.Load() {
		return false
	}
	f.refused.Add(1)
	return true
}

var errInFlight = &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}

func (f *inFlight) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.refuse() {
		return nil, errInFlight
	}
	return f.API.PutItem(ctx, in, opts...)
}

func (f *inFlight) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.refuse() {
		return nil, errInFlight
	}
	return f.API.UpdateItem(ctx, in, opts...)
}

// A single write of the account item that meets a transaction in flight
// (a burst's ledger writes) is sent again until it goes through; one that
// keeps meeting them fails busy (503) within the budget and changes nothing.
func TestSingleWritesOfTheAccountItemAreRetriedPastTransactionConflicts(t *testing.T) {
	ctx := context.Background()
	tables, err := server.NewTables(ctx, "sw")
	if err != nil {
		t.Fatal(err)
	}
	f := &inFlight{API: server.Client()}
	st := dynamostore.New(f, tables, dynamostore.WithLedgerBudget(time.Second))
	user := "user-single-writes"
	if err := st.CreateAccount(ctx, domain.Account{UserID: user, Plan: domain.PlanFree, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	f.refused.Store(0)
	f.refusals.Store(3)
	if err := st.SetOutputRetention(ctx, user, 7); err != nil {
		t.Fatalf("retention after 3 conflicts: %v", err)
	}
	f.refused.Store(0)
	secret, err := st.EnsureWebhookSecret(ctx, user, "whsec_first")
	if err != nil || secret != "whsec_first" {
		t.Fatalf("webhook secret after 3 conflicts = %q, %v", secret, err)
	}
	if got := f.refused.Load(); got != 3 {
		t.Errorf("%d writes refused, want 3", got)
	}
	a, err := st.GetAccount(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if a.OutputRetentionDays != 7 || a.WebhookSecret != "whsec_first" {
		t.Errorf("account after the retried writes: retention %d, secret %q; want 7, whsec_first", a.OutputRetentionDays, a.WebhookSecret)
	}

	f.refusals.Store(-1) // a transaction that never leaves
	if err := st.SetOutputRetention(ctx, user, 30); !errors.Is(err, domain.ErrBusy) {
		t.Errorf("retention under endless conflicts = %v, want ErrBusy", err)
	}
	if a, err := st.GetAccount(ctx, user); err != nil || a.OutputRetentionDays != 7 {
		t.Errorf("retention after the busy refusal = %d, %v; want 7 unchanged", a.OutputRetentionDays, err)
	}
}
