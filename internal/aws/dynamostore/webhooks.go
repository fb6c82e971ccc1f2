package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

type webhookAttemptItem struct {
	WebhookID  string `dynamodbav:"webhook_id"`
	Event      string `dynamodbav:"event"`
	Attempt    int    `dynamodbav:"attempt"`
	At         string `dynamodbav:"at"`
	StatusCode int    `dynamodbav:"status_code,omitempty"`
	Error      string `dynamodbav:"error,omitempty"`
	Delivered  bool   `dynamodbav:"delivered"`
}

// webhookFields are the webhook attributes of generation and long-video items.
type webhookFields struct {
	WebhookURL      string               `dynamodbav:"webhook_url,omitempty"`
	WebhookEvents   []string             `dynamodbav:"webhook_events,omitempty"`
	WebhookAttempts []webhookAttemptItem `dynamodbav:"webhook_attempts,omitempty"`
}

func webhookFieldsOf(w domain.Webhook) webhookFields {
	return webhookFields{WebhookURL: w.URL, WebhookEvents: w.Events}
}

func (f webhookFields) webhook() domain.Webhook {
	return domain.Webhook{URL: f.WebhookURL, Events: f.WebhookEvents}
}

func (f webhookFields) attempts() ([]domain.WebhookAttempt, error) {
	var out []domain.WebhookAttempt
	for _, a := range f.WebhookAttempts {
		at, err := parseTime(a.At)
		if err != nil {
			return nil, err
		}
		out = append(out, domain.WebhookAttempt{WebhookID: a.WebhookID, Event: a.Event, Attempt: a.Attempt, At: at,
			StatusCode: a.StatusCode, Error: a.Error, Delivered: a.Delivered})
	}
	return out, nil
}

func (s *Store) EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Accounts),
		Key:                       key("user_id", userID),
		UpdateExpression:          aws.String("SET webhook_secret = if_not_exists(webhook_secret, :c)"),
		ConditionExpression:       aws.String("attribute_exists(user_id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": strAV(candidate)},
		// ALL_NEW: the secret in force whether or not this write changed it.
		ReturnValues: types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return "", fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("webhook secret of %s: %w", userID, err)
	}
	v, ok := out.Attributes["webhook_secret"].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("webhook secret of %s: not returned", userID)
	}
	return v.Value, nil
}

func (s *Store) SetWebhookSecret(ctx context.Context, userID, secret string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Accounts),
		Key:                       key("user_id", userID),
		UpdateExpression:          aws.String("SET webhook_secret = :s"),
		ConditionExpression:       aws.String("attribute_exists(user_id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": strAV(secret)},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("set webhook secret of %s: %w", userID, err)
	}
	return nil
}

func (s *Store) AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error {
	table, keyName := s.tables.Generations, "uuid"
	if kind == domain.WorkLongVideo {
		table, keyName = s.tables.LongVideos, "id"
	}
	av, err := attributevalue.Marshal(webhookAttemptItem{WebhookID: a.WebhookID, Event: a.Event, Attempt: a.Attempt,
		At: formatTime(a.At), StatusCode: a.StatusCode, Error: a.Error, Delivered: a.Delivered})
	if err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(table),
		Key:                      key(keyName, id),
		UpdateExpression:         aws.String("SET webhook_attempts = list_append(if_not_exists(webhook_attempts, :empty), :a)"),
		ConditionExpression:      aws.String("attribute_exists(#k) AND (attribute_not_exists(webhook_attempts) OR size(webhook_attempts) < :max)"),
		ExpressionAttributeNames: map[string]string{"#k": keyName},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":empty": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			":a":     &types.AttributeValueMemberL{Value: []types.AttributeValue{av}},
			":max":   &types.AttributeValueMemberN{Value: strconv.Itoa(domain.MaxWebhookAttempts)},
		},
		// The record as it was when the condition failed: none when it is
		// missing, else its list is full.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		if len(failed.Item) > 0 {
			return fmt.Errorf("record webhook attempt on %s: %w", id, domain.ErrWebhookAttemptsFull)
		}
		return fmt.Errorf("record webhook attempt on %s: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	return nil
}
