package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// An account's open event streams are one item of the rate-limits table
// (the other counter kept per account), which never holds more than the
// limit's leases:
//
//	key "streams#<user>"   leases: stream → its expiry (Unix nanoseconds);
//	                       rev: counts the item's writes; expires_at: the
//	                       latest lease's expiry (Unix seconds, the
//	                       table's TTL), so an account's item goes once
//	                       its last stream lapsed
//
// Opening reads the item (consistently), decides with store.StreamLeases
// and writes it back on the condition that rev is unchanged, deciding
// again when another open or close came first: concurrent opens never pass
// the limit. Closing removes the stream's lease and moves rev, so that an
// open decided on the item before the close decides again.
const (
	streamsKeyPrefix = "streams#"
	streamAttempts   = 25
)

func streamsKey(userID string) map[string]types.AttributeValue {
	return key("key", streamsKeyPrefix+userID)
}

func (s *Store) OpenStream(ctx context.Context, userID, stream string, limit int, at, expires time.Time) (bool, error) {
	for attempt := 0; attempt < streamAttempts; attempt++ {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.tables.RateLimits), Key: streamsKey(userID), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return false, fmt.Errorf("open stream of %s: %w", userID, err)
		}
		leases, rev, err := streamLeasesOf(out.Item)
		if err != nil {
			return false, fmt.Errorf("open stream of %s: %w", userID, err)
		}
		if !leases.Open(stream, limit, at, expires) {
			return false, nil
		}
		m := make(map[string]types.AttributeValue, len(leases))
		for id, until := range leases {
			m[id] = intAV(until.UnixNano())
		}
		cond, values := "rev = :rev", map[string]types.AttributeValue{
			":leases": &types.AttributeValueMemberM{Value: m}, ":next": intAV(rev + 1),
			":exp": intAV(leases.Latest().Add(time.Second).Unix()),
		}
		if rev == 0 {
			cond = "attribute_not_exists(rev)"
		} else {
			values[":rev"] = intAV(rev)
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.tables.RateLimits), Key: streamsKey(userID),
			UpdateExpression:          aws.String("SET leases = :leases, rev = :next, expires_at = :exp"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeValues: values,
		})
		if isConditionFailed(err) {
			continue // another open or close came first: decide again
		}
		if err != nil {
			return false, fmt.Errorf("open stream of %s: %w", userID, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("open stream of %s: the leases changed on each of %d attempts", userID, streamAttempts)
}

func (s *Store) CloseStream(ctx context.Context, userID, stream string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.RateLimits), Key: streamsKey(userID),
		UpdateExpression:          aws.String("REMOVE leases.#s SET rev = rev + :one"),
		ConditionExpression:       aws.String("attribute_exists(leases.#s)"),
		ExpressionAttributeNames:  map[string]string{"#s": stream},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": intAV(1)},
	})
	if err != nil && !isConditionFailed(err) { // no such lease: closed, or lapsed, already
		return fmt.Errorf("close stream of %s: %w", userID, err)
	}
	return nil
}

// streamLeasesOf reads an account's streams item (none: no leases, rev 0).
func streamLeasesOf(item map[string]types.AttributeValue) (store.StreamLeases, int64, error) {
	leases := store.StreamLeases{}
	var rev int64
	if v, ok := item["rev"].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("stored rev %q: %w", v.Value, err)
		}
		rev = n
	}
	m, _ := item["leases"].(*types.AttributeValueMemberM)
	if m == nil {
		return leases, rev, nil
	}
	for id, av := range m.Value {
		v, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return nil, 0, fmt.Errorf("stored lease %s is not a number", id)
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("stored lease %s %q: %w", id, v.Value, err)
		}
		leases[id] = time.Unix(0, n).UTC()
	}
	return leases, rev, nil
}
