package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// ClaimPoll keeps the chain on the generation's item (poll_attempt,
// poll_lease), written by one conditional update.
func (s *Store) ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (bool, int, error) {
	n := &types.AttributeValueMemberN{Value: strconv.Itoa(attempt)}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.tables.Generations),
		Key:              key("uuid", uuid),
		UpdateExpression: aws.String("SET poll_attempt = :a, poll_lease = :until"),
		ConditionExpression: aws.String("attribute_exists(#u) AND (attribute_not_exists(poll_attempt) OR poll_attempt < :a" +
			" OR (poll_attempt = :a AND poll_lease <= :now))"),
		ExpressionAttributeNames: map[string]string{"#u": "uuid"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":a": n, ":until": strAV(formatTime(until)), ":now": strAV(formatTime(now)),
		},
	})
	if err == nil {
		return true, attempt, nil
	}
	if !isConditionFailed(err) {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Generations), Key: key("uuid", uuid), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("poll_attempt"),
	})
	if err != nil {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, err)
	}
	if out.Item == nil {
		return false, 0, fmt.Errorf("claim poll of %s: %w", uuid, domain.ErrNotFound)
	}
	holder := 0
	if v, ok := out.Item["poll_attempt"].(*types.AttributeValueMemberN); ok {
		if holder, err = strconv.Atoi(v.Value); err != nil {
			return false, 0, fmt.Errorf("claim poll of %s: stored attempt %q: %w", uuid, v.Value, err)
		}
	}
	return false, holder, nil
}
