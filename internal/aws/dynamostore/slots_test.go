package dynamostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
)

// The table's TTL may delete a holder's item (past its expires_at) before
// any ask freed its slot, leaving the counter one too high: the next ask
// that finds no slot recounts the holders and gets it.
func TestASlotWhoseItemTTLRemovedIsGivenBack(t *testing.T) {
	ctx := context.Background()
	tables, err := server.NewTables(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	db := server.Client()
	st := dynamostore.New(db, tables)
	at := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	if ok, err := st.AcquireSlot(ctx, "up", "lost", 1, at); err != nil || !ok {
		t.Fatalf("first holder: %v, %v", ok, err)
	}
	// What TTL does: the item goes, nothing else changes.
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tables.Slots), Key: map[string]types.AttributeValue{
		"upstream": &types.AttributeValueMemberS{Value: "up"}, "entry": &types.AttributeValueMemberS{Value: "h#lost"}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.SlotsInUse(ctx, "up"); err != nil || n != 1 {
		t.Fatalf("slots in use after TTL = %d, %v; want the stale count 1", n, err)
	}
	if ok, err := st.AcquireSlot(ctx, "up", "next", 1, at.Add(time.Minute)); err != nil || !ok {
		t.Errorf("the next holder got no slot (%v, %v): a slot whose item TTL removed stays taken", ok, err)
	}
	if n, err := st.SlotsInUse(ctx, "up"); err != nil || n != 1 {
		t.Errorf("slots in use = %d, %v; want 1", n, err)
	}
	// Its TTL attribute is the one the table's TTL reads.
	out, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tables.Slots)})
	if err != nil {
		t.Fatal(err)
	}
	item, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Slots), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"upstream": &types.AttributeValueMemberS{Value: "up"}, "entry": &types.AttributeValueMemberS{Value: "h#next"}}})
	if err != nil {
		t.Fatal(err)
	}
	ttl := aws.ToString(out.TimeToLiveDescription.AttributeName)
	if _, ok := item.Item[ttl].(*types.AttributeValueMemberN); ttl == "" || !ok {
		t.Errorf("the slots table's TTL attribute is %q, and the holder's item has no number there: %v", ttl, item.Item)
	}
}
