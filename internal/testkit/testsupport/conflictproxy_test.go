package testsupport

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func startProxied(t *testing.T) (*DynamoDB, string) {
	t.Helper()
	ctx := context.Background()
	d, err := StartDynamoDB(ctx)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(d.Stop)
	tables, err := d.NewTables(ctx, "proxy")
	if err != nil {
		t.Fatal(err)
	}
	return d, tables.Ledger
}

func ledgerItem(user, entry string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user}, "entry": &types.AttributeValueMemberS{Value: entry}}
}

func addOne(table, user, entry string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: ledgerItem(user, entry),
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}}
}

func TestAnOverlappingTransactionIsCancelledWithTransactionConflictAndChangesNothing(t *testing.T) {
	d, table := startProxied(t)
	ctx := context.Background()
	db := d.Client()

	// The first transaction's window stays open: moto applied it, it holds
	// a and b, and its client waits for the answer.
	inWindow, closeWindow := make(chan struct{}), make(chan struct{})
	d.Proxy.setCommitting(func() { close(inWindow); <-closeWindow })
	first := make(chan error, 1)
	go func() {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			addOne(table, "u", "a"), addOne(table, "u", "b")}})
		first <- err
	}()
	<-inWindow
	d.Proxy.setCommitting(nil)

	// A second one touching b (and c, free) is cancelled, b's reason says why.
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		addOne(table, "u", "c"), addOne(table, "u", "b")}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("overlapping transaction: %v, want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if len(codes) != 2 || codes[0] != "None" || codes[1] != "TransactionConflict" {
		t.Errorf("cancellation reasons %v, want [None TransactionConflict]", codes)
	}
	// A single write of a held item gets TransactionConflictException.
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: ledgerItem("u", "a"),
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}})
	var tcx *types.TransactionConflictException
	if !errors.As(err, &tcx) {
		t.Errorf("single write of a held item: %v, want TransactionConflictException", err)
	}
	// A Put names its item inside it: the proxy finds the key from the schema.
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: ledgerItem("u", "b")})
	if !errors.As(err, &tcx) {
		t.Errorf("put of a held item: %v, want TransactionConflictException", err)
	}
	if tx, single := d.Proxy.Conflicts(); tx != 1 || single != 2 {
		t.Errorf("conflicts counted: %d transactions, %d single writes; want 1 and 2", tx, single)
	}
	// Only the first transaction wrote: a and b once, c never.
	for entry, want := range map[string]string{"a": "1", "b": "1", "c": ""} {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: ledgerItem("u", entry), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if n, ok := out.Item["n"].(*types.AttributeValueMemberN); ok {
			got = n.Value
		}
		if got != want {
			t.Errorf("item %s has n = %q, want %q", entry, got, want)
		}
	}
	// Once its window closed, the first is answered and the same second
	// transaction goes through.
	close(closeWindow)
	if err := <-first; err != nil {
		t.Fatalf("the first transaction: %v", err)
	}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		addOne(table, "u", "c"), addOne(table, "u", "b")}}); err != nil {
		t.Errorf("the second transaction after the first: %v", err)
	}
}

// Conditional read-modify-writes of one item from many goroutines: each
// success is counted once, which moto alone does not guarantee.
func TestConditionalWritesOfOneItemAreAtomicBehindTheProxy(t *testing.T) {
	d, table := startProxied(t)
	ctx := context.Background()
	db := d.Client()
	const writers, each = 16, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	successes := 0
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: ledgerItem("u", "counter"), ConsistentRead: aws.Bool(true)})
				if err != nil {
					t.Error(err)
					return
				}
				read := 0
				if n, ok := out.Item["n"].(*types.AttributeValueMemberN); ok {
					read, _ = strconv.Atoi(n.Value)
				}
				cond := "attribute_not_exists(n) OR n = :read"
				_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: ledgerItem("u", "counter"),
					UpdateExpression: aws.String("SET n = :next"), ConditionExpression: aws.String(cond),
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":read": &types.AttributeValueMemberN{Value: strconv.Itoa(read)},
						":next": &types.AttributeValueMemberN{Value: strconv.Itoa(read + 1)}}})
				var ccf *types.ConditionalCheckFailedException
				if errors.As(err, &ccf) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				done++
				mu.Lock()
				successes++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: ledgerItem("u", "counter"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if n := out.Item["n"].(*types.AttributeValueMemberN).Value; n != strconv.Itoa(successes) || successes != writers*each {
		t.Errorf("counter is %s after %d successful conditional writes (want %d)", n, successes, writers*each)
	}
}

// A transaction that moto cancels after it wrote some of its items (a
// failed condition on its last) leaves every item as it was: the one it
// put absent, the one it updated and the one it deleted unchanged, and the
// next request's write to the same table kept. moto itself
// restores copies of whole tables; scripts/moto_server.py restores the
// items, and this holds it to DynamoDB's all-or-nothing.
func TestACancelledTransactionChangesNothing(t *testing.T) {
	d, table := startProxied(t)
	ctx := context.Background()
	db := d.Client()
	n := func(v string) *types.AttributeValueMemberN { return &types.AttributeValueMemberN{Value: v} }
	put := func(entry string, value string) {
		t.Helper()
		item := ledgerItem("u", entry)
		item["n"] = n(value)
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put("updated", "1")
	put("deleted", "2")
	put("guard", "3")
	newItem := ledgerItem("u", "put")
	newItem["n"] = n("9")
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: newItem}},
		addOne(table, "u", "updated"),
		{Delete: &types.Delete{TableName: aws.String(table), Key: ledgerItem("u", "deleted")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(table), Key: ledgerItem("u", "guard"),
			ConditionExpression: aws.String("n = :four"), ExpressionAttributeValues: map[string]types.AttributeValue{":four": n("4")}}},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 4 || aws.ToString(tce.CancellationReasons[3].Code) != "ConditionalCheckFailed" {
		t.Fatalf("transaction with a failed condition: %v, want cancelled for ConditionalCheckFailed on its last item", err)
	}
	put("other", "5") // another request's write after the cancellation
	for entry, want := range map[string]string{"put": "", "updated": "1", "deleted": "2", "guard": "3", "other": "5"} {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: ledgerItem("u", entry), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if v, ok := out.Item["n"].(*types.AttributeValueMemberN); ok {
			got = v.Value
		}
		if got != want {
			t.Errorf("item %s has n = %q after the cancelled transaction, want %q", entry, got, want)
		}
	}
	// The cancelled transaction's items are free: the same writes succeed.
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: newItem}}, addOne(table, "u", "updated"),
	}}); err != nil {
		t.Errorf("the same writes after the cancellation: %v", err)
	}
}
