package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/store"
)

// queryPage reads one page of an account's records, newest first, applying
// the filters. The user and creation-time index holds keys only: an index
// projecting the records would be written again on every status change, so
// the records of the keys it lists are read from the table by key
// (BatchGetItem, eventually consistent as the index itself is) and the
// filters applied to them. It reads until it has one more matching record
// than asked for (to know whether a next page exists; without a filter the
// index's next entry says so, and its record is not read) or the index
// ends, and makes the cursor from the last record it returns.
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
	if ok {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			"user_id": strAV(q.UserID), "created_at": strAV(formatTime(c.CreatedAt)), idName: strAV(c.ID),
		}
	}
	filtered := q.Status != "" || q.Model != ""
	var (
		items []T
		more  bool
	)
	for !more {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return store.Page[T]{}, fmt.Errorf("list %s of %s: %w", table, q.UserID, err)
		}
		entries := out.Items
		if !filtered && len(items)+len(entries) > q.Limit {
			entries, more = entries[:q.Limit-len(items)], true
		}
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = stringAttr(e, idName)
		}
		records, err := s.batchGet(ctx, table, idName, ids, false)
		if err != nil {
			return store.Page[T]{}, fmt.Errorf("list %s of %s: %w", table, q.UserID, err)
		}
		for _, id := range ids {
			raw, found := records[id]
			if !found || !matches(raw, q, modelAttrs) {
				continue // not found: none is deleted, but an index may lag
			}
			if len(items) == q.Limit {
				more = true
				break
			}
			it, err := decode(raw)
			if err != nil {
				return store.Page[T]{}, err
			}
			items = append(items, it)
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if !more || len(items) == 0 {
		return store.Page[T]{Items: items}, nil
	}
	return store.Page[T]{Items: items, Next: cursorOf(items[len(items)-1]).Encode()}, nil
}

// matches applies a list's filters to a record: its status, and its model
// in any of modelAttrs.
func matches(raw map[string]types.AttributeValue, q store.ListQuery, modelAttrs []string) bool {
	if q.Status != "" && stringAttr(raw, "status") != string(q.Status) {
		return false
	}
	return q.Model == "" || slices.ContainsFunc(modelAttrs, func(a string) bool { return stringAttr(raw, a) == q.Model })
}

// batchGetMax is the most keys one BatchGetItem takes.
const batchGetMax = 100

// batchGetTries bounds the requests for keys DynamoDB leaves unprocessed
// (it returns them when a request exceeds its throughput or size limits).
const batchGetTries = 8

// batchGet reads the items of table whose key attribute keyName has each of
// the values, by value. An item that does not exist is absent from the map.
func (s *Store) batchGet(ctx context.Context, table, keyName string, values []string, consistent bool) (map[string]map[string]types.AttributeValue, error) {
	found := make(map[string]map[string]types.AttributeValue, len(values))
	for chunk := range slices.Chunk(values, batchGetMax) {
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, v := range chunk {
			keys[i] = key(keyName, v)
		}
		req := map[string]types.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(consistent)}}
		for try := 0; len(req[table].Keys) > 0; try++ {
			if try == batchGetTries {
				return nil, fmt.Errorf("read %s by key: %d keys still unprocessed after %d requests", table, len(req[table].Keys), try)
			}
			if try > 0 {
				// Unprocessed keys mean the table is busy: back off before
				// asking again, as AWS advises.
				if err := pause(ctx, time.Duration(1<<try)*10*time.Millisecond); err != nil {
					return nil, fmt.Errorf("read %s by key: %w", table, err)
				}
			}
			out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("read %s by key: %w", table, err)
			}
			for _, it := range out.Responses[table] {
				found[stringAttr(it, keyName)] = it
			}
			req = out.UnprocessedKeys
		}
	}
	return found, nil
}
