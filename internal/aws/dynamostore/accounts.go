package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
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
	// The totals, JournalSeq and JournalAt are purse 0's (purses.go): the
	// seq of its last journal entry and that entry's time. Every write of
	// the purse is conditioned on JournalSeq being what it read, and moves
	// it on.
	JournalSeq int64  `dynamodbav:"jseq,omitempty"`
	JournalAt  string `dynamodbav:"jat,omitempty"`
	// Spread is set by the first transfer between purses: from then on a
	// hold chooses among all the purses from its first attempt.
	Spread bool `dynamodbav:"spread,omitempty"`
	// WebhookSecret signs the account's webhooks.
	WebhookSecret string `dynamodbav:"webhook_secret,omitempty"`
	// OutputRetentionDays: absent for the default retention.
	OutputRetentionDays int `dynamodbav:"output_retention_days,omitempty"`
	// Usage is this month's, read from the day counters (monthUsage).
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

// GetAccount reads the account item, the account's other purses (one
// Query) and this month's usage (one Query of its day items); its size
// does not depend on the holds open.
func (s *Store) GetAccount(ctx context.Context, userID string) (domain.Account, error) {
	a, err := s.readAccountItem(ctx, userID)
	if err != nil {
		return domain.Account{}, err
	}
	ps, err := s.pursesWith(ctx, userID, a)
	if err != nil {
		return domain.Account{}, err
	}
	t := sumPurses(ps)
	a.Balance, a.Held, a.Captured, a.Granted = t.balance, t.held, t.captured, t.granted
	month := domain.UsageMonth(time.Now())
	u, err := s.monthUsage(ctx, userID, month)
	if err != nil {
		return domain.Account{}, err
	}
	a.Usage = map[string]domain.Usage{month: u}
	return a.account()
}

// GetAccountHeader is the account item alone, all that authentication
// needs: its plan and settings, not its totals (zero here) or usage.
func (s *Store) GetAccountHeader(ctx context.Context, userID string) (domain.Account, error) {
	a, err := s.readAccountItem(ctx, userID)
	if err != nil {
		return domain.Account{}, err
	}
	a.Balance, a.Held, a.Captured, a.Granted = 0, 0, 0, 0
	return a.account()
}

// monthUsage adds up a month's day counters (journal.go): the credits
// captured and the works they paid for. They are items of their own, so
// the account item does not grow by a pair of attributes every month.
func (s *Store) monthUsage(ctx context.Context, userID, month string) (domain.Usage, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:              aws.String(s.tables.Ledger),
		KeyConditionExpression: aws.String("user_id = :u AND begins_with(entry, :m)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(userID), ":m": strAV(usagePrefix + month + "-"),
		},
	})
	var u domain.Usage
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return domain.Usage{}, fmt.Errorf("usage of %s in %s: %w", userID, month, err)
		}
		for _, raw := range page.Items {
			counts, err := usageCountsOf(raw)
			if err != nil {
				return domain.Usage{}, fmt.Errorf("usage of %s in %s: %w", userID, month, err)
			}
			for _, c := range counts {
				u.Credits = u.Credits.Add(c.Credits)
				u.Jobs += c.Generations + c.Videos
			}
		}
	}
	return u, nil
}
