package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

type idempotencyItem struct {
	PK          string `dynamodbav:"pk"`
	Fingerprint string `dynamodbav:"fingerprint"`
	StatusCode  int    `dynamodbav:"status_code"`
	Body        []byte `dynamodbav:"body,omitempty"`
	CreatedAt   string `dynamodbav:"created_at"`
	// ExpiresAt is in Unix seconds: the table's TTL attribute.
	ExpiresAt int64 `dynamodbav:"expires_at"`
}

func idempotencyKey(userID, k string) string { return userID + "#" + k }

func (s *Store) ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	item, err := attributevalue.MarshalMap(idempotencyItem{PK: idempotencyKey(r.UserID, r.Key), Fingerprint: r.Fingerprint,
		CreatedAt: formatTime(r.CreatedAt), ExpiresAt: r.ExpiresAt.Unix()})
	if err != nil {
		return domain.IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	// TTL deletes expired items within days, not at once: an expired one is
	// overwritten.
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Idempotency), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk) OR expires_at <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(r.CreatedAt.Unix(), 10)},
		},
	})
	if err == nil {
		return domain.IdempotencyRecord{}, true, nil
	}
	if !isConditionFailed(err) {
		return domain.IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Idempotency), Key: key("pk", idempotencyKey(r.UserID, r.Key)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return domain.IdempotencyRecord{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if out.Item == nil {
		// Released between the two calls: the caller may try again.
		return domain.IdempotencyRecord{}, false, fmt.Errorf("idempotency key released meanwhile: %w", domain.ErrConflict)
	}
	var it idempotencyItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return domain.IdempotencyRecord{}, false, fmt.Errorf("decode idempotency key: %w", err)
	}
	created, err := parseTime(it.CreatedAt)
	if err != nil {
		return domain.IdempotencyRecord{}, false, err
	}
	return domain.IdempotencyRecord{UserID: r.UserID, Key: r.Key, Fingerprint: it.Fingerprint, StatusCode: it.StatusCode,
		Body: it.Body, CreatedAt: created, ExpiresAt: time.Unix(it.ExpiresAt, 0).UTC()}, false, nil
}

func (s *Store) FinishIdempotencyKey(ctx context.Context, userID, k string, status int, body []byte) error {
	if len(body) > domain.MaxIdempotentAnswer {
		return fmt.Errorf("finish idempotency key: %d bytes: %w", len(body), domain.ErrAnswerTooLarge)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tables.Idempotency),
		Key:                 key("pk", idempotencyKey(userID, k)),
		UpdateExpression:    aws.String("SET status_code = :c, body = :b"),
		ConditionExpression: aws.String("status_code = :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberN{Value: strconv.Itoa(status)}, ":b": &types.AttributeValueMemberB{Value: body},
			":zero": &types.AttributeValueMemberN{Value: "0"},
		},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("finish idempotency key: no claim in progress: %w", domain.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("finish idempotency key: %w", err)
	}
	return nil
}

func (s *Store) ReleaseIdempotencyKey(ctx context.Context, userID, k string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(s.tables.Idempotency),
		Key:                 key("pk", idempotencyKey(userID, k)),
		ConditionExpression: aws.String("status_code = :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero": &types.AttributeValueMemberN{Value: "0"},
		},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
