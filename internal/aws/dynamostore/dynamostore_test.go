package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/testkit/storetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
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

// TestAUsageItemHoldsOnePairWhateverTheAccountUses: a capture adds to the
// counters of its day, model and key. In one item per day those counters
// grew by three attributes per pair the account used, towards DynamoDB's
// 400 KB item limit (a capture's transaction would then fail), and each
// capture rewrote the whole item's size in write units; one item per pair
// stays the same size.
func TestAUsageItemHoldsOnePairWhateverTheAccountUses(t *testing.T) {
	ctx := context.Background()
	tables, err := server.NewTables(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(server.Client(), tables, dynamostore.WithLedgerBudget(testsupport.StandInLedgerBudget))
	user := "user-usage-pairs"
	if err := st.CreateAccount(ctx, domain.Account{UserID: user, Plan: domain.PlanPro, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Grant(ctx, user, "initial", decimal.NewFromInt(1000)); err != nil {
		t.Fatal(err)
	}
	for i := range storetest.UsagePairs {
		work := fmt.Sprintf("work-%d", i)
		model, key := storetest.UsageModels[i%len(storetest.UsageModels)], fmt.Sprintf("mgk_%02d", i/len(storetest.UsageModels))
		if err := st.Hold(ctx, user, domain.Hold{WorkID: work, Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(1), CreatedAt: time.Now(), Model: model, KeyPrefix: key}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Capture(ctx, user, work); err != nil {
			t.Fatal(err)
		}
	}
	out, err := server.Client().Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND begins_with(entry, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": &types.AttributeValueMemberS{Value: user}, ":p": &types.AttributeValueMemberS{Value: "usage#"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != storetest.UsagePairs {
		t.Errorf("%d usage items for %d model and key pairs, want one each", len(out.Items), storetest.UsagePairs)
	}
	for _, item := range out.Items {
		if len(item) > 5 { // user_id, entry, c, g, v
			entry, _ := item["entry"].(*types.AttributeValueMemberS)
			t.Errorf("usage item %s has %d attributes: it grows with the pairs the account uses", entry.Value, len(item))
		}
	}
}

// TestASceneUpdateWritesABoundedItem: each scene's update rewrites the
// video's record, billed by the item's whole size. With the longest texts
// the API takes (20 scenes of 2,000 characters, with narration) the record
// stays the size of its scenes' states (at most 12 KB, with fal's three
// URLs per scene), not the 170 KB of its texts.
func TestASceneUpdateWritesABoundedItem(t *testing.T) {
	ctx := context.Background()
	tables, err := server.NewTables(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(server.Client(), tables)
	v := storetest.LongTextsVideo("user-long-texts", time.Now())
	if err := st.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	record := func() int {
		out, err := server.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.LongVideos),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: v.ID}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return dynamostore.ItemSize(out.Item)
	}
	// The record's own fields and 20 states of at most 512 bytes.
	const bound = 2<<10 + 20*512
	for n := 1; n <= len(v.Scenes); n++ {
		// A fal scene's state, with its three URLs: the largest there is.
		job := fmt.Sprintf("https://queue.fal.run/fal-ai/kling-video/requests/0a1b2c3d-4e5f-6789-abcd-%012d", n)
		state := domain.SceneState{Status: domain.StatusProcessing, Upstream: "fal-main",
			UpstreamJob: domain.UpstreamJob{ID: fmt.Sprintf("0a1b2c3d-4e5f-6789-abcd-%012d", n), CancelURL: job + "/cancel",
				StatusURL: job + "/status", ResponseURL: job}}
		if err := st.SetSceneStatus(ctx, v.ID, n, state, time.Now()); err != nil {
			t.Fatal(err)
		}
		if size := record(); size > bound {
			t.Fatalf("after scene %d's update the record is %d bytes, over %d: each update is billed %d write units", n, size, bound, (size+1023)/1024)
		}
	}
	t.Logf("the record after its 20 scenes' updates: %d bytes", record())
}
