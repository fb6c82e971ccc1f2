package dynamostore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// queryPage reads one page of an account's records, newest first, applying
// the filters. The user and creation-time index holds keys only: an index
// projecting the records would be written again on every status change, so
// the records of the keys it lists are read from the table by key
// (BatchGetItem, eventually consistent as the index itself is) and the
// filters applied to them. It examines one window of the index after the
// cursor (q.Window(): the page's limit, or store.ExamineLimit with a
// filter), so a page is one Query and one BatchGetItem whatever the
// account's history; the window's next entry only says whether more
// follow, and its record is not read. store.WindowPage makes the page.
func queryPage[T any](ctx context.Context, s *Store, table, idName string, q store.ListQuery,
	decode func(map[string]types.AttributeValue) (T, error), matches func(T) bool, cursorOf func(T) store.Cursor) (store.Page[T], error) {
	c, ok, err := store.ParseCursor(q.Cursor)
	if err != nil {
		return store.Page[T]{}, err
	}
	window := q.Window()
	in := &dynamodb.QueryInput{
		TableName: aws.String(table), IndexName: aws.String(indexUserCreatedAt),
		KeyConditionExpression:    aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": strAV(q.UserID)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(window + 1)),
	}
	if ok {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			"user_id": strAV(q.UserID), "created_at": strAV(formatTime(c.CreatedAt)), idName: strAV(c.ID),
		}
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return store.Page[T]{}, fmt.Errorf("list %s of %s: %w", table, q.UserID, err)
	}
	entries, more := out.Items, out.LastEvaluatedKey != nil
	if len(entries) > window {
		entries, more = entries[:window], true
	}
	if len(entries) == 0 {
		return store.Page[T]{}, nil
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = stringAttr(e, idName)
	}
	lastEntry := entries[len(entries)-1]
	lastAt, err := parseTime(stringAttr(lastEntry, "created_at"))
	if err != nil {
		return store.Page[T]{}, fmt.Errorf("list %s of %s: index entry: %w", table, q.UserID, err)
	}
	records, err := s.batchGet(ctx, table, idName, ids, false)
	if err != nil {
		return store.Page[T]{}, fmt.Errorf("list %s of %s: %w", table, q.UserID, err)
	}
	var matched []T
	for _, id := range ids {
		raw, found := records[id]
		if !found {
			continue // none is deleted, but an index may lag
		}
		it, err := decode(raw)
		if err != nil {
			return store.Page[T]{}, err
		}
		if matches(it) {
			matched = append(matched, it)
		}
	}
	return store.WindowPage(matched, q.Limit, cursorOf, store.Cursor{CreatedAt: lastAt, ID: ids[len(ids)-1]}, more), nil
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
