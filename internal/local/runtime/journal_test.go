package runtime_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// transactions pages GET /api/account/transactions with query q to the end.
func transactions(t *testing.T, rt *runtime.Runtime, key, q string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		path := "/api/account/transactions?limit=3" + q
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a := call(t, rt, http.MethodGet, path, key, nil)
		if a.status != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %s", path, a.status, a.body)
		}
		data, _ := a.decoded["data"].([]any)
		for _, d := range data {
			out = append(out, d.(map[string]any))
		}
		next, _ := a.decoded["next_cursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

func TestTheJournalAndUsageAccountForEveryCredit(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	key := owner.APIKey

	var ids []string
	for _, body := range []map[string]any{gen("theta-4-fast", map[string]any{"prompt": "a"}),
		gen("theta-4-fast", map[string]any{"prompt": "b"}), gen("zeta", map[string]any{"prompt": "c"})} {
		created := call(t, rt, http.MethodPost, "/api/generations/generate", key, body)
		if created.status != http.StatusOK {
			t.Fatalf("generate: HTTP %d %s", created.status, created.body)
		}
		ids = append(ids, created.str("uuid"))
	}
	for _, id := range ids {
		if a, ok := waitFinal(t, rt, key, id, 30*time.Second); !ok || a.str("status") != "completed" {
			t.Fatalf("generation %s ended %q", id, a.str("status"))
		}
	}

	// A record turns final just before its hold is settled (two writes):
	// the books are read once every hold is.
	settledAccount(t, rt, owner.UserID)
	acct := call(t, rt, http.MethodGet, "/api/account", key, nil)
	entries := transactions(t, rt, key, "")
	if len(entries) != 1+2*len(ids) {
		t.Fatalf("%d transactions, want a grant and a hold and a capture per generation (%d)", len(entries), 1+2*len(ids))
	}
	sum := func(field string) decimal.Decimal {
		total := decimal.Zero
		for _, e := range entries {
			total = total.Add(credits(e[field].(string)))
		}
		return total
	}
	if b := sum("balance_change"); !b.Equal(credits(acct.str("balance"))) {
		t.Errorf("the balance changes sum to %s; the balance went from 0 to %s", b, acct.str("balance"))
	}
	if h := sum("held_change"); !h.Equal(credits(acct.str("held"))) {
		t.Errorf("the held changes sum to %s; held is %s", h, acct.str("held"))
	}
	if newest := entries[0]; newest["balance_after"] != acct.str("balance") || newest["type"] != "capture" {
		t.Errorf("the newest transaction = %v; want a capture leaving the balance %s", newest, acct.str("balance"))
	}

	// Filters.
	captures := transactions(t, rt, key, "&type=capture")
	if len(captures) != len(ids) {
		t.Errorf("%d captures, want %d", len(captures), len(ids))
	}
	ofOne := transactions(t, rt, key, "&work_id="+ids[1])
	if len(ofOne) != 2 || ofOne[0]["type"] != "capture" || ofOne[1]["type"] != "hold" || ofOne[0]["work_id"] != ids[1] {
		t.Errorf("the transactions of %s = %v; want its capture and its hold", ids[1], ofOne)
	}
	if later := transactions(t, rt, key, "&from="+url.QueryEscape(time.Now().Add(time.Minute).Format(time.RFC3339))); len(later) != 0 {
		t.Errorf("%d transactions after now", len(later))
	}

	// Usage, by each grouping, matches the journal's captures.
	type totals struct {
		credits decimal.Decimal
		count   int
	}
	fromJournal := map[string]map[string]totals{"day": {}, "model": {}, "key": {}}
	for _, c := range captures {
		at, err := time.Parse(time.RFC3339Nano, c["created_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		keyPrefix, _ := c["key_prefix"].(string)
		if keyPrefix == "" {
			keyPrefix = "none" // the report's name for work started without a key
		}
		for group, k := range map[string]string{"day": at.UTC().Format(time.DateOnly), "model": c["model"].(string), "key": keyPrefix} {
			tt := fromJournal[group][k]
			tt.credits, tt.count = tt.credits.Add(credits(c["amount"].(string))), tt.count+1
			fromJournal[group][k] = tt
		}
	}
	if len(fromJournal["model"]) != 2 || len(fromJournal["key"]) != 1 {
		t.Errorf("the captures name models %v and keys %v; want two models and the one key", fromJournal["model"], fromJournal["key"])
	}
	for group, want := range fromJournal {
		u := call(t, rt, http.MethodGet, "/api/account/usage?group_by="+group, key, nil)
		if u.status != http.StatusOK {
			t.Fatalf("usage by %s: HTTP %d %s", group, u.status, u.body)
		}
		got := map[string]totals{}
		groups, _ := u.decoded["groups"].([]any)
		for _, g := range groups {
			m := g.(map[string]any)
			if n := int(m["generations"].(float64)); n > 0 {
				got[m["key"].(string)] = totals{credits(m["credits"].(string)), n}
			}
		}
		if len(got) != len(want) {
			t.Errorf("usage by %s = %v; the journal says %v", group, got, want)
		}
		for k, w := range want {
			if g := got[k]; !g.credits.Equal(w.credits) || g.count != w.count {
				t.Errorf("usage by %s of %q = %s credits, %d generations; the journal says %s, %d", group, k, g.credits, g.count, w.credits, w.count)
			}
		}
		if group == "day" && len(groups) != 30 {
			t.Errorf("usage by day lists %d days, want the 30 of the default range", len(groups))
		}
	}

	// Bad queries are a 400 with the envelope.
	for _, q := range []string{"/api/account/transactions?type=payout", "/api/account/transactions?from=yesterday",
		"/api/account/transactions?limit=0", "/api/account/transactions?colour=red",
		"/api/account/usage?group_by=week", "/api/account/usage?from=2026-02-30", "/api/account/usage?from=2026-11-02&to=2026-11-01",
		"/api/account/usage?from=2020-01-01&to=2026-01-01"} {
		checkEnvelope(t, call(t, rt, http.MethodGet, q, key, malformed(nil)), http.StatusBadRequest)
	}
	checkEnvelope(t, call(t, rt, http.MethodGet, "/api/account/transactions", "mgk_short", nil), http.StatusUnauthorized)
}
