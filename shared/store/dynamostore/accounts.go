package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/domain"
)

// accountItem is the account: its totals and settings, never its holds or
// grants (those are items of the ledger table), so its size does not grow
// with the work in flight. The totals, like every ledger amount and the
// usage credits, are integer hundredths of a credit (cents), so that the
// arithmetic in update expressions is exact on any server.
type accountItem struct {
	UserID    string `dynamodbav:"user_id"`
	Plan      string `dynamodbav:"plan"`
	RateLimit int    `dynamodbav:"rate_limit"`
	Balance   int64  `dynamodbav:"balance"`
	Held      int64  `dynamodbav:"held"`
	Granted   int64  `dynamodbav:"granted"`
	Captured  int64  `dynamodbav:"captured"`
	CreatedAt string `dynamodbav:"created_at"`
	// JournalSeq is the seq of the account's last journal entry and
	// JournalAt its time: every ledger write is conditioned on JournalSeq
	// being what it read, and moves it on (journal.go).
	JournalSeq int64  `dynamodbav:"jseq,omitempty"`
	JournalAt  string `dynamodbav:"jat,omitempty"`
	// WebhookSecret signs the account's webhooks.
	WebhookSecret string `dynamodbav:"webhook_secret,omitempty"`
	// OutputRetentionDays: absent for the default retention.
	OutputRetentionDays int `dynamodbav:"output_retention_days,omitempty"`
	// Usage is read from the usage_credits_<month> and usage_jobs_<month>
	// attributes that Capture adds to (see usageFrom).
	Usage map[string]domain.Usage `dynamodbav:"-"`
}

func (it accountItem) account() (domain.Account, error) {
	a := domain.Account{UserID: it.UserID, Plan: domain.Plan(it.Plan), CustomRateLimit: it.RateLimit,
		WebhookSecret: it.WebhookSecret, Usage: it.Usage, OutputRetentionDays: it.OutputRetentionDays,
		Balance: domain.CentsToCredits(it.Balance), Held: domain.CentsToCredits(it.Held),
		Granted: domain.CentsToCredits(it.Granted), Captured: domain.CentsToCredits(it.Captured)}
	var err error
	if a.CreatedAt, err = parseTime(it.CreatedAt); err != nil {
		return domain.Account{}, err
	}
	return a, nil
}

func (s *Store) CreateAccount(ctx context.Context, a domain.Account) error {
	return s.putNew(ctx, s.tables.Accounts, "user_id", accountItem{
		UserID: a.UserID, Plan: string(a.Plan), RateLimit: a.CustomRateLimit,
		CreatedAt: formatTime(a.CreatedAt), OutputRetentionDays: a.OutputRetentionDays,
	}, "create account "+a.UserID)
}

func decodeAccount(userID string, raw map[string]types.AttributeValue) (domain.Account, error) {
	var it accountItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return domain.Account{}, fmt.Errorf("decode account %s: %w", userID, err)
	}
	var err error
	if it.Usage, err = usageFrom(raw); err != nil {
		return domain.Account{}, fmt.Errorf("decode account %s: %w", userID, err)
	}
	return it.account()
}

// GetAccount is one consistent GetItem of the account item, whose size does
// not depend on the holds open.
func (s *Store) GetAccount(ctx context.Context, userID string) (domain.Account, error) {
	return getItem(ctx, s, s.tables.Accounts, "user_id", userID, "account "+userID,
		func(raw map[string]types.AttributeValue) (domain.Account, error) { return decodeAccount(userID, raw) })
}

// Capture adds to these per-month attributes of the account item, so that
// the usage of a month is kept in the same write as the capture.
const (
	usageCreditsPrefix = "usage_credits_"
	usageJobsPrefix    = "usage_jobs_"
)

func usageFrom(item map[string]types.AttributeValue) (map[string]domain.Usage, error) {
	var out map[string]domain.Usage
	for name, av := range item {
		month, credits := strings.CutPrefix(name, usageCreditsPrefix)
		if !credits {
			var jobs bool
			if month, jobs = strings.CutPrefix(name, usageJobsPrefix); !jobs {
				continue
			}
		}
		n, ok := av.(*types.AttributeValueMemberN)
		if !ok {
			return nil, fmt.Errorf("usage attribute %s is not a number", name)
		}
		if out == nil {
			out = map[string]domain.Usage{}
		}
		u := out[month]
		if credits {
			c, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("usage attribute %s: %w", name, err)
			}
			u.Credits = domain.CentsToCredits(c)
		} else {
			j, err := strconv.Atoi(n.Value)
			if err != nil {
				return nil, fmt.Errorf("usage attribute %s: %w", name, err)
			}
			u.Jobs = j
		}
		out[month] = u
	}
	return out, nil
}
