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

// rateLimitTTL keeps a minute's counter a little past its minute.
const rateLimitTTL = 2 * time.Minute

func (s *Store) CountRequest(ctx context.Context, userID string, at time.Time) (int, error) {
	window := store.MinuteWindow(at)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.tables.RateLimits),
		Key:                      key("key", userID+"#"+window.Format("2006-01-02T15:04Z")),
		UpdateExpression:         aws.String("ADD #c :one SET expires_at = :exp"),
		ExpressionAttributeNames: map[string]string{"#c": "count"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(window.Add(rateLimitTTL).Unix(), 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("count request of %s: %w", userID, err)
	}
	v, ok := out.Attributes["count"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("count request of %s: counter has no number", userID)
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0, fmt.Errorf("count request of %s: %w", userID, err)
	}
	return n, nil
}
