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
//	key "streams#<user>"   leases: the record a stream follows → its lease,
//	                       {owner: the stream holding it, expires: Unix
//	                       nanoseconds} (an item written before owners
//	                       holds the expiry alone: a lease without owner);
//	                       rev: counts the item's writes; expires_at: the
//	                       latest lease's expiry (Unix seconds, the
//	                       table's TTL), so an account's item goes once
//	                       its last stream lapsed
//
// Opening reads the item (consistently), decides with store.StreamLeases
// and writes it back on the condition that rev is unchanged, deciding
// again when another open or close came first: concurrent opens never pass
// the limit, and a takeover (an open of a record already leased) counts
// once. Closing removes the stream's lease on the condition that its
// owner is still the closer (a stream whose lease was taken over leaves
// it), and moves rev, so that an open decided on the item before the
// close decides again.
const (
	streamsKeyPrefix = "streams#"
	streamAttempts   = 25
)

func streamsKey(userID string) map[string]types.AttributeValue {
	return key("key", streamsKeyPrefix+userID)
}

func (s *Store) OpenStream(ctx context.Context, userID, stream, owner string, limit int, at, expires time.Time) (bool, error) {
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
		if !leases.Open(stream, owner, limit, at, expires) {
			return false, nil
		}
		m := make(map[string]types.AttributeValue, len(leases))
		for id, l := range leases {
			m[id] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"owner": &types.AttributeValueMemberS{Value: l.Owner}, "expires": intAV(l.Expires.UnixNano()),
			}}
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

func (s *Store) HoldsStream(ctx context.Context, userID, stream, owner string) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.RateLimits), Key: streamsKey(userID), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("leases.#s"),
		ExpressionAttributeNames: map[string]string{"#s": stream},
	})
	if err != nil {
		return false, fmt.Errorf("stream lease of %s: %w", userID, err)
	}
	leases, _, err := streamLeasesOf(out.Item)
	if err != nil {
		return false, fmt.Errorf("stream lease of %s: %w", userID, err)
	}
	return leases.Holds(stream, owner), nil
}

func (s *Store) CloseStream(ctx context.Context, userID, stream, owner string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.RateLimits), Key: streamsKey(userID),
		UpdateExpression:          aws.String("REMOVE leases.#s SET rev = rev + :one"),
		ConditionExpression:       aws.String("leases.#s.#owner = :owner"),
		ExpressionAttributeNames:  map[string]string{"#s": stream, "#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": intAV(1), ":owner": &types.AttributeValueMemberS{Value: owner}},
	})
	if err != nil && !isConditionFailed(err) { // not the owner's: taken over, closed or lapsed already
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
		var lease store.StreamLease
		expires := av
		if lm, ok := av.(*types.AttributeValueMemberM); ok {
			owner, _ := lm.Value["owner"].(*types.AttributeValueMemberS)
			if owner != nil {
				lease.Owner = owner.Value
			}
			expires = lm.Value["expires"]
		} // else written before owners: the expiry alone
		v, ok := expires.(*types.AttributeValueMemberN)
		if !ok {
			return nil, 0, fmt.Errorf("stored lease %s has no expiry", id)
		}
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("stored lease %s %q: %w", id, v.Value, err)
		}
		lease.Expires = time.Unix(0, n).UTC()
		leases[id] = lease
	}
	return leases, rev, nil
}
