package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// JournalReader pages an account's credit journal.
type JournalReader interface {
	JournalEntries(ctx context.Context, q store.JournalQuery) (store.Page[domain.JournalEntry], error)
}

// UsageReader reads an account's usage counters.
type UsageReader interface {
	UsageCounts(ctx context.Context, userID, fromDay, toDay string) ([]domain.UsageCount, error)
}

// Usage report limits.
const (
	defaultUsageDays = 30
	maxUsageDays     = 366
)

// TransactionsRoute is GET /api/account/transactions: the caller's journal,
// newest first, in cursor pages, filtered by type, work_id and a time range
// (from inclusive, to exclusive, RFC 3339).
func TransactionsRoute(gate *Gate, journal JournalReader) Handler {
	return gate.AuthedUser(readAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		q, err := journalQuery(req, userID)
		if err != nil {
			return Response{}, err
		}
		page, err := journal.JournalEntries(ctx, q)
		if err != nil {
			return Response{}, err
		}
		views := make([]apiview.Transaction, len(page.Items))
		for i, e := range page.Items {
			views[i] = transactionView(e)
		}
		return jsonResponse(http.StatusOK, apiview.ListOf(views, page.Next)), nil
	})
}

func journalQuery(req Request, userID string) (store.JournalQuery, error) {
	q := store.JournalQuery{UserID: userID}
	entryType := queryFilter{"type", func(v string) string {
		t, err := domain.ParseEntryType(v)
		if err != nil {
			return invalidMessage(err)
		}
		q.Type = t
		return ""
	}}
	filters := []queryFilter{entryType, textFilter("work_id", &q.WorkID), timeFilter("from", &q.From), timeFilter("to", &q.To)}
	inOrder := func() string {
		if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
			return "from must be before to"
		}
		return ""
	}
	var err error
	if q.Limit, q.Cursor, err = pageQuery(req, filters, inOrder); err != nil {
		return store.JournalQuery{}, err
	}
	return q, nil
}

// timeFilter is a filter on an RFC 3339 time.
func timeFilter(name string, to *time.Time) queryFilter {
	return queryFilter{name, func(v string) string {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return name + " must be an RFC 3339 time, such as 2026-11-24T00:00:00Z"
		}
		*to = t
		return ""
	}}
}

func transactionView(e domain.JournalEntry) apiview.Transaction {
	before := domain.Totals{}.Apply(e.Type, e.Amount) // the movement alone, from zero
	balanceChange, heldChange := before.Balance, before.Held
	if e.Type == domain.EntryOpening {
		balanceChange, heldChange = e.After.Balance, e.After.Held
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return apiview.Transaction{
		ID: e.EntryID(), Purse: e.Purse, Type: string(e.Type), Amount: domain.FormatCredits(e.Amount.Abs()),
		BalanceChange: signedCredits(balanceChange), HeldChange: signedCredits(heldChange),
		BalanceAfter: domain.FormatCredits(e.After.Balance), HeldAfter: domain.FormatCredits(e.After.Held),
		WorkID: opt(e.WorkID), WorkType: opt(string(e.WorkKind)), Model: opt(e.Model), KeyPrefix: opt(e.KeyPrefix),
		GrantID: opt(e.GrantID), CreatedAt: e.At.UTC().Format(time.RFC3339Nano),
	}
}

// signedCredits is FormatCredits with the sign of a change ("-2.50", "2.50").
func signedCredits(d decimal.Decimal) string {
	if d.IsNegative() {
		return "-" + domain.FormatCredits(d.Neg())
	}
	return domain.FormatCredits(d)
}

// UsageRoute is GET /api/account/usage: the captures of the UTC days from
// `from` to `to` (inclusive, YYYY-MM-DD; the last 30 days by default),
// grouped by day (every day listed, zeros included), model or key, from the
// counters each capture added to in its own write: no journal or table is
// scanned.
func UsageRoute(gate *Gate, usage UsageReader) Handler {
	return gate.AuthedUser(readAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		from, to, groupBy, err := usageQuery(req, gate.now())
		if err != nil {
			return Response{}, err
		}
		counts, err := usage.UsageCounts(ctx, userID, from.Format(time.DateOnly), to.Format(time.DateOnly))
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusOK, usageReport(counts, from, to, groupBy)), nil
	})
}

var usageGroupings = []string{"day", "model", "key"}

func usageQuery(req Request, now time.Time) (from, to time.Time, groupBy string, err error) {
	to = now.UTC().Truncate(24 * time.Hour)
	from = to.AddDate(0, 0, -(defaultUsageDays - 1))
	groupBy = "day"
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(req.QueryStringParameters)) {
		v := req.QueryStringParameters[k]
		switch k {
		case "from", "to":
			d, perr := time.Parse(time.DateOnly, v)
			if perr != nil {
				problems = append(problems, k+" must be a date, YYYY-MM-DD (UTC)")
				continue
			}
			if k == "from" {
				from = d
			} else {
				to = d
			}
		case "group_by":
			if !slices.Contains(usageGroupings, v) {
				problems = append(problems, "group_by must be one of "+strings.Join(usageGroupings, ", "))
				continue
			}
			groupBy = v
		default:
			problems = append(problems, fmt.Sprintf("unknown query parameter %q (allowed: from, to, group_by)", truncate(k, 32)))
		}
	}
	if len(problems) == 0 {
		if _, hasFrom := req.QueryStringParameters["from"]; !hasFrom {
			if _, hasTo := req.QueryStringParameters["to"]; hasTo {
				from = to.AddDate(0, 0, -(defaultUsageDays - 1))
			}
		}
		switch days := int(to.Sub(from).Hours()/24) + 1; {
		case days < 1:
			problems = append(problems, "from must not be after to")
		case days > maxUsageDays:
			problems = append(problems, fmt.Sprintf("the range is %d days; at most %d", days, maxUsageDays))
		}
	}
	if len(problems) > 0 {
		return from, to, "", &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: strings.Join(problems, "; ")}
	}
	return from, to, groupBy, nil
}

// noKey names the usage of work started without an API key (an
// identity-provider token) in a report grouped by key.
const noKey = "none"

func usageReport(counts []domain.UsageCount, from, to time.Time, groupBy string) apiview.UsageReport {
	type sums struct {
		credits      decimal.Decimal
		gens, videos int
	}
	groups := map[string]*sums{}
	var order []string
	add := func(key string) *sums {
		if g, ok := groups[key]; ok {
			return g
		}
		groups[key] = &sums{}
		order = append(order, key)
		return groups[key]
	}
	if groupBy == "day" {
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			add(d.Format(time.DateOnly))
		}
	}
	var total sums
	for _, c := range counts {
		key := c.Day
		switch groupBy {
		case "model":
			key = c.Model
		case "key":
			key = cmp.Or(c.KeyPrefix, noKey)
		}
		g := add(key)
		g.credits, g.gens, g.videos = g.credits.Add(c.Credits), g.gens+c.Generations, g.videos+c.Videos
		total.credits, total.gens, total.videos = total.credits.Add(c.Credits), total.gens+c.Generations, total.videos+c.Videos
	}
	if groupBy != "day" {
		// Largest spend first; the name breaks ties.
		slices.SortFunc(order, func(a, b string) int {
			if c := groups[b].credits.Cmp(groups[a].credits); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
	}
	out := apiview.UsageReport{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), GroupBy: groupBy,
		Total:  apiview.UsageTotals{Credits: domain.FormatCredits(total.credits), Generations: total.gens, Videos: total.videos},
		Groups: make([]apiview.UsageGroup, 0, len(order))}
	for _, k := range order {
		g := groups[k]
		out.Groups = append(out.Groups, apiview.UsageGroup{Key: k,
			UsageTotals: apiview.UsageTotals{Credits: domain.FormatCredits(g.credits), Generations: g.gens, Videos: g.videos}})
	}
	return out
}
