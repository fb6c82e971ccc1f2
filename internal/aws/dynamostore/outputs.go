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

// filesFields are the stored-files attributes of generation and long-video
// items: absent until the record has outputs, and until a deletion began.
type filesFields struct {
	OutputExpiresAt string `dynamodbav:"output_expires_at,omitempty"`
	DataRemoval     string `dynamodbav:"data_removal,omitempty"`
	// Finishing is set (true) once the outputs are being written.
	Finishing bool `dynamodbav:"finishing,omitempty"`
}

func (f filesFields) files() (domain.StoredFiles, error) {
	at, err := parseTime(f.OutputExpiresAt)
	return domain.StoredFiles{ExpiresAt: at, Removal: domain.Removal(f.DataRemoval), Finishing: f.Finishing}, err
}

func (s *Store) ClaimGenerationFinish(ctx context.Context, uuid string, at time.Time) error {
	return s.claimFinish(ctx, s.tables.Generations, "uuid", uuid, at)
}

func (s *Store) ClaimLongVideoFinish(ctx context.Context, id string, at time.Time) error {
	return s.claimFinish(ctx, s.tables.LongVideos, "id", id, at)
}

// claimFinish sets finishing on a record still processing: one
// conditional UpdateItem, so it and a cancel's (which requires finishing
// absent) cannot both pass.
func (s *Store) claimFinish(ctx context.Context, table, keyName, keyValue string, at time.Time) error {
	return s.updateProcessing(ctx, table, keyName, keyValue, "SET finishing = :true, updated_at = :at",
		map[string]types.AttributeValue{":true": &types.AttributeValueMemberBOOL{Value: true}, ":at": strAV(formatTime(at))})
}

// setOutputExpiry adds output_expires_at to a finishing write's SET
// expression when the outcome has one.
func setOutputExpiry(set string, values map[string]types.AttributeValue, o domain.Outcome) string {
	if o.OutputExpiresAt.IsZero() {
		return set
	}
	values[":expires"] = strAV(formatTime(o.OutputExpiresAt))
	return set + ", output_expires_at = :expires"
}

func (s *Store) SetGenerationRemoval(ctx context.Context, uuid string, r domain.Removal, at time.Time) error {
	return s.setRemoval(ctx, s.tables.Generations, "uuid", uuid, r, at, "")
}

func (s *Store) SetLongVideoRemoval(ctx context.Context, id string, r domain.Removal, at time.Time) error {
	// A regenerate reuses the video's files: they are not removed under it
	// (and BeginRegenerate waits for no removal).
	return s.setRemoval(ctx, s.tables.LongVideos, "id", id, r, at, "attribute_not_exists(regenerate)")
}

// setRemoval is one conditional UpdateItem (which never creates an item),
// then a consistent read to say why it changed nothing.
func (s *Store) setRemoval(ctx context.Context, table, keyName, keyValue string, r domain.Removal, at time.Time, idle string) error {
	values := map[string]types.AttributeValue{":r": strAV(string(r)), ":at": strAV(formatTime(at)),
		":removed": strAV(string(domain.RemovalRemoved))}
	var cond string
	switch r {
	case domain.RemovalRemoving:
		cond = "attribute_exists(#k) AND #s <> :processing AND (attribute_not_exists(data_removal) OR data_removal <> :removed)"
		values[":processing"] = strAV(string(domain.StatusProcessing))
		if idle != "" {
			cond += " AND " + idle
		}
	case domain.RemovalRemoved:
		cond = "data_removal IN (:removing, :removed)"
		values[":removing"] = strAV(string(domain.RemovalRemoving))
	default:
		return fmt.Errorf("set removal of %s %s to %q: %w", table, keyValue, r, domain.ErrInvalid)
	}
	names := map[string]string{"#k": keyName, "#s": "status"}
	if r == domain.RemovalRemoved {
		// DynamoDB refuses names an expression does not use.
		names = nil
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key(keyName, keyValue),
		UpdateExpression:          aws.String("SET data_removal = :r, updated_at = :at"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("set removal of %s %s: %w", table, keyValue, err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: key(keyName, keyValue), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#s, data_removal"), ExpressionAttributeNames: map[string]string{"#s": "status"},
	})
	if err != nil {
		return fmt.Errorf("set removal of %s %s: %w", table, keyValue, err)
	}
	if out.Item == nil {
		return fmt.Errorf("set removal of %s %s: %w", table, keyValue, domain.ErrNotFound)
	}
	status, removal := stringAttr(out.Item, "status"), stringAttr(out.Item, "data_removal")
	if r == domain.RemovalRemoving && domain.Removal(removal) == domain.RemovalRemoved {
		return nil
	}
	return fmt.Errorf("set removal of %s %s to %s: status %s, removal %q: %w", table, keyValue, r, status, removal, domain.ErrConflict)
}

func (s *Store) SetOutputRetention(ctx context.Context, userID string, days int) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Accounts), Key: key("user_id", userID),
		UpdateExpression:          aws.String("SET output_retention_days = :d"),
		ConditionExpression:       aws.String("attribute_exists(user_id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberN{Value: strconv.Itoa(days)}},
	})
	if isConditionFailed(err) {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("set the retention of %s: %w", userID, err)
	}
	return nil
}
