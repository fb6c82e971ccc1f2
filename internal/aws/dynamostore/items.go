package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The records (generations, long videos, accounts, API keys) are each one
// item of their table, read and created alike: these helpers do it once for
// every record type. what names the record or the write in errors
// ("generation <uuid>", "create long video <id>").

// decoder unmarshals an item into its item type I and converts that to the
// record T; a malformed item is "decode <what>: …".
func decoder[I, T any](what string, convert func(I) (T, error)) func(map[string]types.AttributeValue) (T, error) {
	return func(raw map[string]types.AttributeValue) (T, error) {
		var it I
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			var zero T
			return zero, fmt.Errorf("decode %s: %w", what, err)
		}
		return convert(it)
	}
}

// getItem reads the item whose key attribute keyName is keyValue with a
// consistent read and decodes it; a missing item is domain.ErrNotFound.
func getItem[T any](ctx context.Context, s *Store, table, keyName, keyValue, what string,
	decode func(map[string]types.AttributeValue) (T, error)) (T, error) {
	var zero T
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: key(keyName, keyValue), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return zero, fmt.Errorf("read %s: %w", what, err)
	}
	if out.Item == nil {
		return zero, fmt.Errorf("%s: %w", what, domain.ErrNotFound)
	}
	return decode(out.Item)
}

// putNew writes item (a struct with dynamodbav tags) as a new item of table;
// one whose key attribute keyName is taken already is
// domain.ErrAlreadyExists, and nothing is overwritten.
func (s *Store) putNew(ctx context.Context, table, keyName string, item any, what string) error {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: av,
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": keyName},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("%s: %w", what, domain.ErrAlreadyExists)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// recordTimes are the times every generation and long-video item keeps.
type recordTimes struct {
	CreatedAt string `dynamodbav:"created_at"`
	UpdatedAt string `dynamodbav:"updated_at"`
	Deadline  string `dynamodbav:"deadline"`
}

func recordTimesOf(created, updated, deadline time.Time) recordTimes {
	return recordTimes{CreatedAt: formatTime(created), UpdatedAt: formatTime(updated), Deadline: formatTime(deadline)}
}

// parse reads the three times back.
func (t recordTimes) parse() (created, updated, deadline time.Time, err error) {
	if created, err = parseTime(t.CreatedAt); err != nil {
		return
	}
	if updated, err = parseTime(t.UpdatedAt); err != nil {
		return
	}
	deadline, err = parseTime(t.Deadline)
	return
}
