package costs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// LedgerUnits are the units DynamoDB bills one account's hold, settle and
// authorizer read, with some holds open on the account.
type ledgerUnits struct {
	UserID    string `json:"-"`
	OpenHolds int    `json:"open_holds"`
	// AccountItemBytes is the account item's size (dynamostore.ItemSize).
	AccountItemBytes int `json:"account_item_bytes"`
	// Hold, Settle (a capture) and AuthorizerRead (the Lambda authorizer:
	// the API key and the account).
	Hold           Units `json:"hold"`
	Settle         Units `json:"settle"`
	AuthorizerRead Units `json:"authorizer_read"`
}

// Units are read and write request units.
type Units struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
}

func unitsOf(c counts) Units { return Units{Read: c.DynamoDBReadUnits, Write: c.DynamoDBWriteUnit} }

// SeedClient is the DynamoDB client MeasureLedger needs: the store's calls
// and BatchWriteItem, which seeds the open holds.
type seedClient interface {
	dynamostore.API
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// MeasureLedger opens an account on the tables, leaves openHolds holds open
// on it, then counts one more hold, its capture and one authorizer read
// through the meter.
//
// The first open hold is made by Hold; the others are copies of its item
// (another work id and time each) written in batches, with the account's
// totals moved to match in one update: the state that many Holds leave,
// without one transaction per hold, which moto's server makes slow on a
// large table (it copies the table for each).
func MeasureLedger(ctx context.Context, api seedClient, tables dynamostore.Tables, openHolds int) (ledgerUnits, error) {
	plain := dynamostore.New(api, tables)
	meter := &Meter{}
	metered := dynamostore.New(MeterDynamoDB(api, tables, meter), tables)
	created, err := (&accounts.Service{Store: plain}).CreateAccount(ctx, accounts.NewAccount{
		Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(int64(openHolds) + 100)})
	if err != nil {
		return ledgerUnits{}, err
	}
	user := created.UserID
	hold := func(st *dynamostore.Store) (string, error) {
		w := uuid.NewString()
		return w, st.Hold(ctx, user, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(1), CreatedAt: time.Now()})
	}
	if openHolds > 0 {
		first, err := hold(plain)
		if err != nil {
			return ledgerUnits{}, fmt.Errorf("open a hold: %w", err)
		}
		if err := seedHolds(ctx, api, tables, user, first, openHolds-1); err != nil {
			return ledgerUnits{}, err
		}
	}
	out := ledgerUnits{UserID: user, OpenHolds: openHolds}
	before := meter.Snapshot()
	work, err := hold(metered)
	if err != nil {
		return ledgerUnits{}, err
	}
	out.Hold = unitsOf(meter.Snapshot().Sub(before))

	before = meter.Snapshot()
	if settled, err := metered.Capture(ctx, user, work); err != nil || !settled {
		return ledgerUnits{}, fmt.Errorf("capture: settled %v, %v", settled, err)
	}
	out.Settle = unitsOf(meter.Snapshot().Sub(before))

	before = meter.Snapshot()
	gate := &httpapi.Gate{Store: metered}
	resp, err := gate.Authorize(ctx, httpapi.AuthorizerRequest{
		RouteKey: "GET /api/generations/status/{id}", Headers: map[string]string{"authorization": "Bearer " + created.APIKey}})
	if err != nil || resp.Context["user_id"] != user {
		return ledgerUnits{}, fmt.Errorf("authorize: %v, context %v", err, resp.Context)
	}
	out.AuthorizerRead = unitsOf(meter.Snapshot().Sub(before))

	item, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Accounts),
		Key: map[string]types.AttributeValue{"user_id": &types.AttributeValueMemberS{Value: user}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return ledgerUnits{}, err
	}
	out.AccountItemBytes = dynamostore.ItemSize(item.Item)
	return out, nil
}

// seedHolds copies the hold of work n times under new work ids and moves
// their amounts from the account's balance to held.
func seedHolds(ctx context.Context, api seedClient, tables dynamostore.Tables, user, work string, n int) error {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Ledger),
		Key: map[string]types.AttributeValue{"user_id": s(user), "entry": s("hold#" + work)}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return fmt.Errorf("read the first hold: %v", err)
	}
	for done := 0; done < n; {
		var batch []types.WriteRequest
		for ; done < n && len(batch) < 25; done++ {
			item := map[string]types.AttributeValue{}
			for k, v := range out.Item {
				item[k] = v
			}
			item["entry"] = s("hold#" + uuid.NewString())
			item["created_at"] = s(time.Now().UTC().Add(time.Duration(done) * time.Microsecond).Format("2006-01-02T15:04:05.000000000Z"))
			batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
		for len(batch) > 0 {
			res, err := api.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tables.Ledger: batch}})
			if err != nil {
				return fmt.Errorf("seed holds: %w", err)
			}
			batch = res.UnprocessedItems[tables.Ledger]
		}
	}
	// The copies' amount in the ledger's unit (cents), as the first hold's.
	amount := out.Item["amount"]
	if n != 1 {
		c, ok := amount.(*types.AttributeValueMemberN)
		if !ok {
			return errors.New("seed holds: the first hold has no amount")
		}
		per, err := strconv.ParseInt(c.Value, 10, 64)
		if err != nil {
			return fmt.Errorf("seed holds: amount %q: %w", c.Value, err)
		}
		amount = &types.AttributeValueMemberN{Value: strconv.FormatInt(per*int64(n), 10)}
	}
	_, err = api.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables.Accounts),
		Key:              map[string]types.AttributeValue{"user_id": s(user)},
		UpdateExpression: aws.String("SET balance = balance - :n, held = held + :n"), ConditionExpression: aws.String("balance >= :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": amount}})
	if err != nil {
		return fmt.Errorf("seed holds: move the totals: %w", err)
	}
	return nil
}
