package dynamostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/store"
)

// queryPage reads one page of an account's records from the user and
// creation-time index, newest first, applying the filters. It reads until it
// has one more item than asked for (to know whether a next page exists) or
// the index ends, and makes the cursor from the last item it returns.
func queryPage[T any](ctx context.Context, s *Store, table, idName string, modelAttrs []string, q store.ListQuery,
	decode func(map[string]types.AttributeValue) (T, error), cursorOf func(T) store.Cursor) (store.Page[T], error) {
	c, ok, err := store.ParseCursor(q.Cursor)
	if err != nil {
		return store.Page[T]{}, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String(IndexUserCreatedAt),
		KeyConditionExpression:    aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": strAV(q.UserID)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(q.Limit + 1)),
	}
	var filters []string
	if q.Status != "" {
		filters = append(filters, "#s = :s")
		in.ExpressionAttributeNames = map[string]string{"#s": "status"}
		in.ExpressionAttributeValues[":s"] = strAV(string(q.Status))
	}
	if q.Model != "" {
		var ors []string
		for _, a := range modelAttrs {
			ors = append(ors, a+" = :m")
		}
		filters = append(filters, "("+strings.Join(ors, " OR ")+")")
		in.ExpressionAttributeValues[":m"] = strAV(q.Model)
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	if ok {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			"user_id": strAV(q.UserID), "created_at": strAV(formatTime(c.CreatedAt)), idName: strAV(c.ID),
		}
	}
	var items []T
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return store.Page[T]{}, fmt.Errorf("list %s of %s: %w", table, q.UserID, err)
		}
		for _, raw := range out.Items {
			it, err := decode(raw)
			if err != nil {
				return store.Page[T]{}, err
			}
			items = append(items, it)
		}
		if len(items) > q.Limit || out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if len(items) <= q.Limit {
		return store.Page[T]{Items: items}, nil
	}
	items = items[:q.Limit]
	return store.Page[T]{Items: items, Next: cursorOf(items[q.Limit-1]).Encode()}, nil
}
