package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
	"github.com/mediagen-dev/mediagen/shared/store/dynamostore"
	"github.com/mediagen-dev/mediagen/shared/store/storetest"
	"github.com/mediagen-dev/mediagen/shared/testsupport"
)

var server *testsupport.DynamoDB

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var err error
	server, err = testsupport.StartDynamoDB(ctx)
	cancel()
	if err != nil {
		// Never skip: the DynamoDB adapter must be proved in CI.
		fmt.Fprintf(os.Stderr, "FAIL: the DynamoDB conformance suite needs moto's server: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// newStore creates a fresh set of tables on the server.
func newStore(t *testing.T) *dynamostore.Store {
	t.Helper()
	st, err := server.NewStore(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConformance runs the conformance suite with the requests recorded,
// then checks them against dynamostore.Accesses.
func TestConformance(t *testing.T) {
	t.Logf("adapter: dynamodb (moto_server at %s)", server.Endpoint)
	tables, err := server.NewTables(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(server.Client(), tables)
	storetest.Run(t, dynamostore.New(rec, tables, dynamostore.WithLedgerBudget(testsupport.StandInLedgerBudget)))
	t.Run("AccessesDeclareEveryRequest", rec.checkAccesses)
}

// The cancellation reasons of a ledger transaction come back as the typed
// errors: a hold of settled work is ErrAlreadySettled (a conflict), of open
// work nothing (already held), beyond the balance an
// *InsufficientCreditsError, on no account ErrNotFound.
func TestLedgerCancellationsDecodeIntoTypedErrors(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	user := "user-typed"
	if err := st.CreateAccount(ctx, domain.Account{UserID: user, Plan: domain.PlanFree, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Grant(ctx, user, "g", decimal.NewFromInt(5)); err != nil {
		t.Fatal(err)
	}
	h := domain.Hold{WorkID: "w1", Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(2), CreatedAt: time.Now()}
	if err := st.Hold(ctx, user, h); err != nil {
		t.Fatal(err)
	}
	if err := st.Hold(ctx, user, h); err != nil {
		t.Errorf("hold of open work again = %v, want nil (already held)", err)
	}
	if _, err := st.Capture(ctx, user, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Hold(ctx, user, h); !errors.Is(err, dynamostore.ErrAlreadySettled) || !errors.Is(err, domain.ErrConflict) {
		t.Errorf("hold of settled work = %v, want ErrAlreadySettled (a conflict)", err)
	}
	var short *domain.InsufficientCreditsError
	if err := st.Hold(ctx, user, domain.Hold{WorkID: "w2", Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(4), CreatedAt: time.Now()}); !errors.As(err, &short) || !short.Available.Equal(decimal.NewFromInt(3)) {
		t.Errorf("hold beyond the balance = %v, want insufficient credits with 3 available", err)
	}
	if err := st.Hold(ctx, "nobody", h); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("hold on no account = %v, want ErrNotFound", err)
	}
}

// stingy answers each BatchGetItem's first key only and hands the rest
// back as unprocessed, as DynamoDB does when a request meets its limits.
type stingy struct {
	dynamostore.API
	requests int
}

func (s *stingy) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	s.requests++
	first := map[string]types.KeysAndAttributes{}
	rest := map[string]types.KeysAndAttributes{}
	for table, ka := range in.RequestItems {
		first[table] = types.KeysAndAttributes{Keys: ka.Keys[:1], ConsistentRead: ka.ConsistentRead}
		if len(ka.Keys) > 1 {
			rest[table] = types.KeysAndAttributes{Keys: ka.Keys[1:], ConsistentRead: ka.ConsistentRead}
		}
	}
	out, err := s.API.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: first}, opts...)
	if err != nil {
		return nil, err
	}
	out.UnprocessedKeys = rest
	return out, nil
}

// A list page reads again the records DynamoDB left unprocessed, and pages
// as it does when every key is answered at once.
func TestListReadsUnprocessedKeysAgain(t *testing.T) {
	ctx := context.Background()
	tables, err := server.NewTables(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	plain := dynamostore.New(server.Client(), tables)
	slow := &stingy{API: server.Client()}
	st := dynamostore.New(slow, tables)
	user := "user-unprocessed"
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < 4; i++ {
		g := &domain.Generation{UUID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), UserID: user, Model: "provider-x",
			ModelVersion: "zeta", Kind: domain.MediaImage, Input: []byte(`{}`), ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: decimal.NewFromInt(1), CreatedAt: start.Add(time.Duration(i) * time.Second), UpdatedAt: start,
			Deadline: start.Add(time.Hour)}
		if err := plain.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []store.ListQuery{
		{UserID: user, Limit: 3},
		{UserID: user, Limit: 3, Status: domain.StatusProcessing},
	} {
		want, err := plain.ListGenerations(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.ListGenerations(ctx, q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		if len(got.Items) != 3 || got.Next != want.Next {
			t.Errorf("list %+v: %d items, next %q; want 3 and %q", q, len(got.Items), got.Next, want.Next)
		}
		for i := range got.Items {
			if got.Items[i].UUID != want.Items[i].UUID {
				t.Errorf("list %+v: item %d is %s, want %s", q, i, got.Items[i].UUID, want.Items[i].UUID)
			}
		}
	}
	if slow.requests < 3 {
		t.Errorf("%d batch reads; the keys left unprocessed were not asked again", slow.requests)
	}
}
