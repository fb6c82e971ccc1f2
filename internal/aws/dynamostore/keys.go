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

type apiKeyItem struct {
	Hash   string   `dynamodbav:"key_hash"`
	Prefix string   `dynamodbav:"prefix"`
	UserID string   `dynamodbav:"user_id"`
	Name   string   `dynamodbav:"name,omitempty"`
	Scopes []string `dynamodbav:"scopes,omitempty"`
	// DailyLimit is the daily credit limit in cents; absent for none.
	DailyLimit int64 `dynamodbav:"daily_credit_limit,omitempty"`
	// CreatedBy is the prefix of the key that made this one (absent for
	// the owner's keys); Ancestors that key and those above it, nearest
	// first, with their limits.
	CreatedBy  string         `dynamodbav:"created_by,omitempty"`
	Ancestors  []ancestorItem `dynamodbav:"ancestors,omitempty"`
	CreatedAt  string         `dynamodbav:"created_at"`
	LastUsedAt string         `dynamodbav:"last_used_at,omitempty"`
	RevokedAt  string         `dynamodbav:"revoked_at,omitempty"`
}

// ancestorItem is a key above another and its daily limit in cents.
type ancestorItem struct {
	Prefix     string `dynamodbav:"prefix"`
	DailyLimit int64  `dynamodbav:"daily_credit_limit"`
}

func (it apiKeyItem) apiKey() (domain.APIKey, error) {
	k := domain.APIKey{Hash: it.Hash, Prefix: it.Prefix, UserID: it.UserID, Name: it.Name,
		DailyCreditLimit: domain.CentsToCredits(it.DailyLimit)}
	for _, a := range it.Ancestors {
		k.Ancestors = append(k.Ancestors, domain.KeyLimit{Prefix: a.Prefix, DailyCreditLimit: domain.CentsToCredits(a.DailyLimit)})
	}
	stored := make([]domain.Scope, len(it.Scopes))
	for i, sc := range it.Scopes {
		stored[i] = domain.Scope(sc)
	}
	k.Scopes = domain.KeyScopes(stored)
	var err error
	for _, t := range []struct {
		stored string
		to     *time.Time
	}{{it.CreatedAt, &k.CreatedAt}, {it.RevokedAt, &k.RevokedAt}, {it.LastUsedAt, &k.LastUsedAt}} {
		if *t.to, err = parseTime(t.stored); err != nil {
			return domain.APIKey{}, err
		}
	}
	return k, nil
}

func (s *Store) PutAPIKey(ctx context.Context, k domain.APIKey) error {
	limit, err := domain.CreditsToCents(k.DailyCreditLimit)
	if err != nil {
		return fmt.Errorf("store api key %s: %w", k.Prefix, err)
	}
	scopes := make([]string, len(k.Scopes))
	for i, sc := range k.Scopes {
		scopes[i] = string(sc)
	}
	ancestors := make([]ancestorItem, len(k.Ancestors))
	for i, a := range k.Ancestors {
		cents, err := domain.CreditsToCents(a.DailyCreditLimit)
		if err != nil {
			return fmt.Errorf("store api key %s: limit of %s: %w", k.Prefix, a.Prefix, err)
		}
		ancestors[i] = ancestorItem{Prefix: a.Prefix, DailyLimit: cents}
	}
	return s.putNew(ctx, s.tables.APIKeys, "key_hash",
		apiKeyItem{Hash: k.Hash, Prefix: k.Prefix, UserID: k.UserID, Name: k.Name, Scopes: scopes, DailyLimit: limit,
			CreatedBy: k.CreatedBy(), Ancestors: ancestors, CreatedAt: formatTime(k.CreatedAt)},
		"store api key "+k.Prefix)
}

func (s *Store) GetAPIKey(ctx context.Context, hash string) (domain.APIKey, error) {
	// A consistent read, so that a revocation takes effect at once.
	// The hash is not named in errors.
	return getItem(ctx, s, s.tables.APIKeys, "key_hash", hash, "api key", decoder("api key", apiKeyItem.apiKey))
}

func (s *Store) RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.APIKeys), IndexName: aws.String(indexKeyPrefix),
		KeyConditionExpression:    aws.String("prefix = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": strAV(prefix)},
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("find api key %s: %w", prefix, err)
	}
	if len(out.Items) == 0 {
		return time.Time{}, fmt.Errorf("api key %s: %w", prefix, domain.ErrNotFound)
	}
	var revoked time.Time
	for _, raw := range out.Items {
		var it apiKeyItem
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			return time.Time{}, fmt.Errorf("decode api key %s: %w", prefix, err)
		}
		up, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.tables.APIKeys),
			Key:                       key("key_hash", it.Hash),
			UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :at)"),
			ConditionExpression:       aws.String("attribute_exists(key_hash)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":at": strAV(formatTime(at))},
			ReturnValues:              types.ReturnValueAllNew, // the revocation in force, ours or an earlier one
		})
		if err != nil {
			return time.Time{}, fmt.Errorf("revoke api key %s: %w", prefix, err)
		}
		var after apiKeyItem
		if err := attributevalue.UnmarshalMap(up.Attributes, &after); err != nil {
			return time.Time{}, fmt.Errorf("decode api key %s: %w", prefix, err)
		}
		if revoked, err = parseTime(after.RevokedAt); err != nil {
			return time.Time{}, err
		}
	}
	return revoked, nil
}

// TouchAPIKey is one conditional UpdateItem: it fails its condition, and
// writes nothing, when the stored last use is recent enough (or the key is
// gone, which the condition keeps from creating an item).
func (s *Store) TouchAPIKey(ctx context.Context, hash string, at, staleBefore time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.tables.APIKeys),
		Key:                 key("key_hash", hash),
		UpdateExpression:    aws.String("SET last_used_at = :at"),
		ConditionExpression: aws.String("attribute_exists(key_hash) AND (attribute_not_exists(last_used_at) OR last_used_at < :stale)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": strAV(formatTime(at)), ":stale": strAV(formatTime(staleBefore)),
		},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("note the use of an api key: %w", err)
	}
	return nil
}

func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.APIKeys), IndexName: aws.String(indexKeyUser),
		KeyConditionExpression:    aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": strAV(userID)},
	})
	var keys []domain.APIKey
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list api keys of %s: %w", userID, err)
		}
		var items []apiKeyItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("decode api keys of %s: %w", userID, err)
		}
		for _, it := range items {
			k, err := it.apiKey()
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j].CreatedAt.Before(keys[j-1].CreatedAt); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys, nil
}
