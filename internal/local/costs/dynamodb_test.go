package costs_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/costs"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

func dynamo(t *testing.T) (*testsupport.DynamoDB, dynamostore.Tables) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	tables, err := server.NewTables(ctx, "cost")
	if err != nil {
		t.Fatal(err)
	}
	return server, tables
}

// The meter bills what DynamoDB's on-demand pricing says for items of known
// sizes: reads per 4 KB (half when eventually consistent, at least one even
// for an absent item), writes per 1 KB of the larger of before and after,
// transactions twice, each index entry written once more, and a batch get
// as a get per key.
func TestMeterCountsUnitsByItemSize(t *testing.T) {
	server, tables := dynamo(t)
	ctx := context.Background()
	m := &costs.Meter{}
	db := costs.MeterDynamoDB(server.Client(), tables, m)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(name, v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{name: s(v)}
	}
	step := func(name string, wantRead, wantWrite float64, fn func() error) {
		t.Helper()
		before := m.Snapshot()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := m.Snapshot().Sub(before)
		if d.DynamoDBReadUnits != wantRead || d.DynamoDBWriteUnit != wantWrite {
			t.Errorf("%s: %v read, %v write units; want %v and %v", name, d.DynamoDBReadUnits, d.DynamoDBWriteUnit, wantRead, wantWrite)
		}
	}
	// A counters item (no index) of about 5 KB: 5 write units, 2 read units.
	big := map[string]types.AttributeValue{"name": s("big"), "payload": s(strings.Repeat("x", 5000))}
	if got := dynamostore.ItemSize(big); got != 4+3+7+5000 {
		t.Fatalf("ItemSize = %d, want %d", got, 4+3+7+5000)
	}
	step("put 5 KB", 0, 5, func() error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Counters), Item: big})
		return err
	})
	step("consistent get 5 KB", 2, 0, func() error {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Counters), Key: map[string]types.AttributeValue{"name": s("big")}, ConsistentRead: aws.Bool(true)})
		return err
	})
	step("eventually consistent get, projected", 1, 0, func() error {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Counters), Key: map[string]types.AttributeValue{"name": s("big")}, ProjectionExpression: aws.String("#n"), ExpressionAttributeNames: map[string]string{"#n": "name"}})
		return err
	})
	step("get of an absent item", 1, 0, func() error {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Counters), Key: map[string]types.AttributeValue{"name": s("none")}, ConsistentRead: aws.Bool(true)})
		return err
	})
	step("batch get of the 5 KB item and an absent one, eventually consistent", 1+0.5, 0, func() error {
		_, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{tables.Counters: {
			Keys: []map[string]types.AttributeValue{{"name": s("big")}, {"name": s("none")}}}}})
		return err
	})
	step("shrinking update bills the larger size", 0, 5, func() error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables.Counters), Key: map[string]types.AttributeValue{"name": s("big")}, UpdateExpression: aws.String("REMOVE payload")})
		return err
	})
	// A transaction of two small items, one of which enters the ledger's
	// open-holds index: 2×1 + 2×1 + 1.
	step("transaction with an index entry", 0, 5, func() error {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(tables.Counters), Item: map[string]types.AttributeValue{"name": s("small")}}},
			{Put: &types.Put{TableName: aws.String(tables.Ledger), Item: map[string]types.AttributeValue{"user_id": s("u"), "entry": s("hold#w"), "open_shard": s("3"), "created_at": s("2026")}}},
		}})
		return err
	})
	step("query of the index (eventually consistent)", 0.5, 0, func() error {
		_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tables.Ledger), IndexName: aws.String(dynamostore.IndexOpenHolds),
			KeyConditionExpression: aws.String("open_shard = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": s("3")}})
		return err
	})
	// A generation enters both of its keys-only indexes when it is made;
	// a change of its status changes no key, so it writes the item alone.
	gen := key("uuid", "g1")
	step("new generation with two keys-only index entries", 0, 1+1+1, func() error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tables.Generations), Item: map[string]types.AttributeValue{
			"uuid": s("g1"), "user_id": s("u"), "id": &types.AttributeValueMemberN{Value: "1"}, "created_at": s("2026"), "status": s("processing")}})
		return err
	})
	step("status change writes no index entry", 0, 1, func() error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables.Generations), Key: gen,
			UpdateExpression: aws.String("SET #s = :c"), ExpressionAttributeNames: map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": s("completed")}})
		return err
	})
}

// TestLedgerUnitsDoNotGrowWithOpenHolds: with 2,000 holds open on one
// account its item stays under 2 KB, and a hold, a settle and an
// authorizer read bill the same units as with none open.
func TestLedgerUnitsDoNotGrowWithOpenHolds(t *testing.T) {
	server, tables := dynamo(t)
	ctx := context.Background()
	none, err := costs.MeasureLedger(ctx, server.Client(), tables, 0)
	if err != nil {
		t.Fatal(err)
	}
	many, err := costs.MeasureLedger(ctx, server.Client(), tables, 2000)
	if err != nil {
		t.Fatal(err)
	}
	st := dynamostore.New(server.Client(), tables)
	holds, err := st.AccountHolds(ctx, many.UserID)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.GetAccount(ctx, many.UserID)
	if err != nil || len(holds) != 2000 || a.Held.IntPart() != 2000 {
		t.Fatalf("the account has %d holds open, %s held (%v); want 2,000", len(holds), a.Held, err)
	}
	t.Logf("0 holds open: %+v", none)
	t.Logf("2,000 holds open: %+v", many)
	if many.AccountItemBytes >= 2048 || none.AccountItemBytes >= 2048 {
		t.Errorf("account item is %d bytes with 2,000 holds open (%d with none), want under 2 KB", many.AccountItemBytes, none.AccountItemBytes)
	}
	if many.Hold != none.Hold || many.Settle != none.Settle || many.AuthorizerRead != none.AuthorizerRead {
		t.Errorf("units with 2,000 holds open %+v differ from those with none %+v", many, none)
	}
	if none.Hold.Write == 0 || none.Settle.Write == 0 || none.AuthorizerRead.Read == 0 {
		t.Errorf("the meter counted nothing: %+v", none)
	}
}

// A generation's record is written four times (made, its upstream run, the
// poll's claim, its outcome), and DynamoDB bills each write by the whole
// item: a long input is kept in an item of its own, so it is billed once,
// whatever the length of the prompt, and the record's writes stay at one
// unit each.
func TestALongInputIsBilledOnceNotOnEveryRecordWrite(t *testing.T) {
	server, tables := dynamo(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	life := func(prompt string) (wrote float64, inputItem int) {
		t.Helper()
		m := &costs.Meter{}
		st := dynamostore.New(costs.MeterDynamoDB(server.Client(), tables, m), tables)
		input, _ := json.Marshal(map[string]string{"prompt": prompt, "aspect_ratio": "16:9", "output_format": "png"})
		g := &domain.Generation{UUID: uuid.NewString(), UserID: "user-" + uuid.NewString(), Model: "provider-a", ModelVersion: "zeta-pro",
			Kind: domain.MediaImage, Input: input, ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: decimal.RequireFromString("18.20"), CreatedAt: at, UpdatedAt: at, Deadline: at.Add(10 * time.Minute)}
		if err := st.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
		run := domain.UpstreamRun{Upstream: "simulator", Model: "provider-a/zeta-pro", Jobs: []domain.UpstreamJob{{ID: "ekc35sj2raae5ec24vs6v2w4q4"}}}
		if err := st.SetUpstreamJobs(ctx, g.UUID, run, at); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.ClaimPoll(ctx, g.UUID, 0, at, at.Add(5*time.Minute)); err != nil {
			t.Fatal(err)
		}
		done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"http://127.0.0.1:18081/generations/" + g.UUID + "/0.png"}}
		if err := st.FinishGeneration(ctx, g.UUID, done, at); err != nil {
			t.Fatal(err)
		}
		item := map[string]types.AttributeValue{"uuid": &types.AttributeValueMemberS{Value: g.UUID + "#input"},
			"input": &types.AttributeValueMemberS{Value: string(input)}}
		return m.Snapshot().DynamoDBWriteUnit, dynamostore.ItemSize(item)
	}
	// The counter, the record and its two index entries, then three
	// updates of one unit each.
	const short = 1 + 1 + 2 + 3
	tests := []struct {
		name   string
		prompt string
		apart  bool
	}{
		{"short prompt, kept in the record", "a lighthouse at dawn, watercolor", false},
		{"2,000 characters", strings.Repeat("a lighthouse at dawn. ", 91), true},
		{"20,000 characters", strings.Repeat("a lighthouse at dawn. ", 910), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrote, inputItem := life(tt.prompt)
			want := float64(short)
			if tt.apart {
				want += math.Ceil(float64(inputItem) / 1024)
			}
			if wrote != want {
				t.Errorf("the record's life wrote %v units, want %v (input item %d bytes, apart %v)", wrote, want, inputItem, tt.apart)
			}
		})
	}
}
