package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// conflictRetrying is the client with every single-item write (PutItem,
// UpdateItem, DeleteItem) tried again while DynamoDB refuses it with
// TransactionConflictException: a transaction had the item in flight (a
// ledger write of the account item during a burst, a slot's acquisition),
// and the write was not applied, so sending it again, conditions and all,
// is safe. The SDK's retryer does not retry that code. The retries wait a
// jittered, growing backoff (ledgerBackoff) within budget, then the write
// fails with domain.ErrBusy (503 with Retry-After). Every single write of
// the store goes through here, so none needs a retry loop of its own.
type conflictRetrying struct {
	API
	budget time.Duration
}

func (c conflictRetrying) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return retryConflicts(ctx, c.budget, func() (*dynamodb.PutItemOutput, error) { return c.API.PutItem(ctx, in, opts...) })
}

func (c conflictRetrying) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return retryConflicts(ctx, c.budget, func() (*dynamodb.UpdateItemOutput, error) { return c.API.UpdateItem(ctx, in, opts...) })
}

func (c conflictRetrying) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return retryConflicts(ctx, c.budget, func() (*dynamodb.DeleteItemOutput, error) { return c.API.DeleteItem(ctx, in, opts...) })
}

// retryConflicts runs write until it is not refused for a transaction in
// flight on its item, within budget.
func retryConflicts[T any](ctx context.Context, budget time.Duration, write func() (T, error)) (T, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		began := time.Now()
		out, err := write()
		var conflict *types.TransactionConflictException
		if err == nil || !errors.As(err, &conflict) {
			return out, err
		}
		wait := ledgerBackoff(attempt, time.Since(began))
		if time.Since(start)+wait > budget {
			return out, fmt.Errorf("a transaction kept the item in flight for %s (%d attempts): %w: %w", budget, attempt+1, domain.ErrBusy, err)
		}
		if err := pause(ctx, wait); err != nil {
			return out, err
		}
	}
}
