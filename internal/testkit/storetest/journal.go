package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// journalOf reads the account's whole journal, newest first.
func journalOf(t *testing.T, s store.Store, q store.JournalQuery) []domain.JournalEntry {
	t.Helper()
	var out []domain.JournalEntry
	for {
		page, err := s.JournalEntries(context.Background(), q)
		if err != nil {
			t.Fatalf("JournalEntries: %v", err)
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}

func testJournal(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	work := func(i int) string { return []string{"w-capture-", "w-release-", "w-refund-"}[i] + uuid.NewString() }
	works := []string{work(0), work(1), work(2)}
	for i, w := range works {
		h := domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: credits("2.50"), CreatedAt: time.Now(),
			Model: "flux", KeyPrefix: "mgk_journal"}
		if i == 2 {
			h.Kind = domain.WorkLongVideo
		}
		if err := s.Hold(ctx, user, h); err != nil {
			t.Fatal(err)
		}
		if err := s.Hold(ctx, user, h); err != nil { // a retry writes nothing more
			t.Fatalf("repeated hold: %v", err)
		}
	}
	for i, op := range []func(context.Context, string, string) (bool, error){s.Capture, s.Release, s.Refund} {
		if ok, err := op(ctx, user, works[i]); err != nil || !ok {
			t.Fatalf("settle %d = %v, %v", i, ok, err)
		}
		if ok, err := op(ctx, user, works[i]); err != nil || ok {
			t.Fatalf("settle %d again = %v, %v; want false, nil", i, ok, err)
		}
	}
	checkAccount(t, s, user, "97.50", "0", "100", "2.50")

	entries := journalOf(t, s, store.JournalQuery{UserID: user, Limit: 100})
	want := []struct {
		typ              domain.EntryType
		work             string
		balance, held    string
		captured, amount string
	}{
		{domain.EntryRefund, works[2], "97.50", "0", "2.50", "2.50"},
		{domain.EntryRelease, works[1], "95", "2.50", "2.50", "2.50"},
		{domain.EntryCapture, works[0], "92.50", "5", "2.50", "2.50"},
		{domain.EntryHold, works[2], "92.50", "7.50", "0", "2.50"},
		{domain.EntryHold, works[1], "95", "5", "0", "2.50"},
		{domain.EntryHold, works[0], "97.50", "2.50", "0", "2.50"},
		{domain.EntryGrant, "", "100", "0", "0", "100"},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for i, w := range want {
		e := entries[i]
		if e.Seq != int64(len(want)-i) || e.Type != w.typ || e.WorkID != w.work || !e.Amount.Equal(credits(w.amount)) ||
			!e.After.Balance.Equal(credits(w.balance)) || !e.After.Held.Equal(credits(w.held)) || !e.After.Captured.Equal(credits(w.captured)) {
			t.Errorf("entry %d = seq %d %s %s %s after balance %s held %s captured %s; want %s %s %s after %s %s %s",
				i, e.Seq, e.Type, e.WorkID, e.Amount, e.After.Balance, e.After.Held, e.After.Captured,
				w.typ, w.work, w.amount, w.balance, w.held, w.captured)
		}
		if w.work != "" && (e.Model != "flux" || e.KeyPrefix != "mgk_journal") {
			t.Errorf("entry %d names model %q and key %q; want flux and mgk_journal", i, e.Model, e.KeyPrefix)
		}
		if i > 0 && e.At.After(entries[i-1].At) {
			t.Errorf("entry %d is later than the entry after it", e.Seq)
		}
	}
	if entries[len(entries)-1].GrantID != "initial-"+user {
		t.Errorf("the grant entry names grant %q", entries[len(entries)-1].GrantID)
	}
	if entries[0].WorkKind != domain.WorkLongVideo {
		t.Errorf("the refund's work kind is %q, want long_video", entries[0].WorkKind)
	}
}

func testJournalQueries(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	var works []string
	for i := 0; i < 5; i++ {
		w := uuid.NewString()
		works = append(works, w)
		if err := s.Hold(ctx, user, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Capture(ctx, user, w); err != nil {
			t.Fatal(err)
		}
	}
	all := journalOf(t, s, store.JournalQuery{UserID: user, Limit: 100})
	if len(all) != 11 {
		t.Fatalf("%d entries, want 11", len(all))
	}
	paged := journalOf(t, s, store.JournalQuery{UserID: user, Limit: 3})
	if len(paged) != len(all) {
		t.Fatalf("pages of 3 give %d entries, one page %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].Seq != all[i].Seq {
			t.Fatalf("paged entry %d is seq %d, want %d", i, paged[i].Seq, all[i].Seq)
		}
	}
	tests := []struct {
		name string
		q    store.JournalQuery
		want int
	}{
		{"captures", store.JournalQuery{Type: domain.EntryCapture}, 5},
		{"captures in pages of 2", store.JournalQuery{Type: domain.EntryCapture, Limit: 2}, 5},
		{"one work", store.JournalQuery{WorkID: works[2]}, 2},
		{"one work's capture", store.JournalQuery{WorkID: works[2], Type: domain.EntryCapture}, 1},
		{"from the third work's hold", store.JournalQuery{From: all[6].At}, 7},
		{"before it", store.JournalQuery{To: all[6].At}, 4},
		{"nothing after now", store.JournalQuery{From: time.Now().Add(time.Minute)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.UserID = user
			if q.Limit == 0 {
				q.Limit = 100
			}
			got := journalOf(t, s, q)
			if len(got) != tt.want {
				t.Errorf("%d entries, want %d", len(got), tt.want)
			}
			for _, e := range got {
				if (q.Type != "" && e.Type != q.Type) || (q.WorkID != "" && e.WorkID != q.WorkID) ||
					(!q.From.IsZero() && e.At.Before(q.From)) || (!q.To.IsZero() && !e.At.Before(q.To)) {
					t.Errorf("entry %d (%s %s at %s) is outside the query", e.Seq, e.Type, e.WorkID, e.At)
				}
			}
		})
	}
	if _, err := s.JournalEntries(ctx, store.JournalQuery{UserID: user, Limit: 5, Cursor: "not-a-cursor"}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("a foreign cursor = %v, want ErrInvalid", err)
	}
	if page, err := s.JournalEntries(ctx, store.JournalQuery{UserID: "user-nobody-" + uuid.NewString(), Limit: 5}); err != nil || len(page.Items) != 0 {
		t.Errorf("another account's journal = %d entries, %v; want none", len(page.Items), err)
	}
}

func testUsageCounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	runs := []struct {
		model, key string
		kind       domain.WorkKind
		amount     string
		capture    bool
	}{
		{"flux", "mgk_a", domain.WorkGeneration, "2", true},
		{"flux", "mgk_a", domain.WorkGeneration, "2", true},
		{"flux", "mgk_b", domain.WorkGeneration, "3", true},
		{"beta-2", "mgk_a", domain.WorkLongVideo, "10", true},
		{"flux", "mgk_a", domain.WorkGeneration, "7", false}, // released: not usage
	}
	for _, r := range runs {
		w := uuid.NewString()
		if err := s.Hold(ctx, user, domain.Hold{WorkID: w, Kind: r.kind, Amount: credits(r.amount), CreatedAt: time.Now(),
			Model: r.model, KeyPrefix: r.key}); err != nil {
			t.Fatal(err)
		}
		op := s.Release
		if r.capture {
			op = s.Capture
		}
		if _, err := op(ctx, user, w); err != nil {
			t.Fatal(err)
		}
	}
	today := domain.UsageDay(time.Now())
	counts, err := s.UsageCounts(ctx, user, today, today)
	if err != nil {
		t.Fatal(err)
	}
	type dim struct{ model, key string }
	got := map[dim]domain.UsageCount{}
	for _, c := range counts {
		if c.Day != today {
			t.Errorf("a count of day %s, want %s", c.Day, today)
		}
		got[dim{c.Model, c.KeyPrefix}] = c
	}
	want := map[dim]struct {
		credits      string
		gens, videos int
	}{
		{"flux", "mgk_a"}:   {"4", 2, 0},
		{"flux", "mgk_b"}:   {"3", 1, 0},
		{"beta-2", "mgk_a"}: {"10", 0, 1},
	}
	if len(got) != len(want) {
		t.Errorf("counts = %+v, want %d model-and-key counters", counts, len(want))
	}
	for d, w := range want {
		c := got[d]
		if !c.Credits.Equal(credits(w.credits)) || c.Generations != w.gens || c.Videos != w.videos {
			t.Errorf("%s/%s = %s credits, %d generations, %d videos; want %s, %d, %d",
				d.model, d.key, c.Credits, c.Generations, c.Videos, w.credits, w.gens, w.videos)
		}
	}
	yesterday := domain.UsageDay(time.Now().Add(-24 * time.Hour))
	if counts, err := s.UsageCounts(ctx, user, yesterday, yesterday); err != nil || len(counts) != 0 {
		t.Errorf("yesterday's usage = %+v, %v; want none", counts, err)
	}
}

// UsagePairs are how many model and key pairs testUsageCountsOfManyPairs
// captures in one day: an adapter whose day item grew by a counter per
// pair shows it in the item (dynamostore's test reads the items).
const UsagePairs = 24

// UsageModels are the models testUsageCountsOfManyPairs captures for.
var UsageModels = []string{"flux", "beta-2", "seedance"}

// testUsageCountsOfManyPairs: an account using many models with many keys
// in a day has each pair counted, in the day's range and the month's
// usage, whatever the range's bounds.
func testUsageCountsOfManyPairs(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "1000")
	type dim struct{ model, key string }
	want := map[dim]int{}
	for i := range UsagePairs {
		d := dim{UsageModels[i%len(UsageModels)], fmt.Sprintf("mgk_%02d", i/len(UsageModels))}
		want[d]++
		w := uuid.NewString()
		if err := s.Hold(ctx, user, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: credits("1.5"), CreatedAt: time.Now(),
			Model: d.model, KeyPrefix: d.key}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Capture(ctx, user, w); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	today, yesterday, tomorrow := domain.UsageDay(now), domain.UsageDay(now.Add(-24*time.Hour)), domain.UsageDay(now.Add(24*time.Hour))
	for _, r := range [][2]string{{today, today}, {yesterday, today}, {today, tomorrow}} {
		counts, err := s.UsageCounts(ctx, user, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		got := map[dim]int{}
		for _, c := range counts {
			if c.Day != today || !c.Credits.Equal(credits("1.5").Mul(decimal.NewFromInt(int64(c.Generations)))) {
				t.Errorf("%s..%s: %+v", r[0], r[1], c)
			}
			got[dim{c.Model, c.KeyPrefix}] += c.Generations
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s..%s: %d pairs %v, want %d %v", r[0], r[1], len(got), got, len(want), want)
		}
	}
	a, err := s.GetAccount(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	u := a.Usage[domain.UsageMonth(now)]
	if u.Jobs != UsagePairs || !u.Credits.Equal(credits("1.5").Mul(decimal.NewFromInt(UsagePairs))) {
		t.Errorf("the month's usage is %d jobs, %s credits; want %d, %s", u.Jobs, u.Credits, UsagePairs, credits("1.5").Mul(decimal.NewFromInt(UsagePairs)))
	}
}

func testKeyBudget(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	const key = "mgk_budget"
	at := time.Now()
	hold := func(amount string) (string, error) {
		w := uuid.NewString()
		return w, s.Hold(ctx, user, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: credits(amount), CreatedAt: at,
			KeyPrefix: key, KeyDailyLimit: credits("10")})
	}
	first, err := hold("4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold("4"); err != nil {
		t.Fatal(err)
	}
	_, err = hold("2.01")
	var over *domain.KeyBudgetExceededError
	if !errors.As(err, &over) {
		t.Fatalf("a hold past the limit = %v, want KeyBudgetExceededError", err)
	}
	if !over.Limit.Equal(credits("10")) || !over.Spent.Equal(credits("8")) || !over.ResetAt.Equal(at.UTC().Truncate(24*time.Hour).Add(24*time.Hour)) {
		t.Errorf("refusal = %+v; want limit 10, spent 8, reset at the next UTC midnight", over)
	}
	checkAccount(t, s, user, "92", "8", "100", "0") // the refused hold changed nothing
	if _, err := hold("2"); err != nil {
		t.Fatalf("a hold up to the limit: %v", err)
	}
	if _, err := s.Release(ctx, user, first); err != nil {
		t.Fatal(err)
	}
	if _, err := hold("4"); err != nil {
		t.Fatalf("a released hold gives its budget back: %v", err)
	}
	spend, err := s.KeySpend(ctx, user, domain.UsageDay(at))
	if err != nil {
		t.Fatal(err)
	}
	if !spend[key].Equal(credits("10")) {
		t.Errorf("spend today = %v, want 10", spend)
	}
	// Another key of the account has its own budget.
	if err := s.Hold(ctx, user, domain.Hold{WorkID: uuid.NewString(), Kind: domain.WorkGeneration, Amount: credits("5"),
		CreatedAt: at, KeyPrefix: "mgk_other", KeyDailyLimit: credits("10")}); err != nil {
		t.Fatal(err)
	}
	checkAccount(t, s, user, "85", "15", "100", "0")
}

func testConcurrentKeyBudget(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	const workers = 40
	var ok, over atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.Hold(ctx, user, domain.Hold{WorkID: uuid.NewString(), Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(1),
				CreatedAt: time.Now(), KeyPrefix: "mgk_race", KeyDailyLimit: credits("5")})
			var exceeded *domain.KeyBudgetExceededError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &exceeded):
				over.Add(1)
			default:
				t.Errorf("Hold: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 5 || over.Load() != workers-5 {
		t.Errorf("%d holds went through and %d were over budget; want 5 and %d", ok.Load(), over.Load(), workers-5)
	}
	checkAccount(t, s, user, "95", "5", "100", "0")
}

// chainHold is a hold of amount by key, whose ancestors (nearest first)
// have these limits.
func chainHold(key domain.KeyLimit, ancestors []domain.KeyLimit, amount string, at time.Time) domain.Hold {
	return domain.Hold{WorkID: uuid.NewString(), Kind: domain.WorkGeneration, Amount: credits(amount), CreatedAt: at,
		KeyPrefix: key.Prefix, KeyDailyLimit: key.DailyCreditLimit, KeyAncestors: ancestors}
}

// A hold counts against its key and every key above it: a child with the
// root's whole limit, and a grandchild, share the root's limit; the refusal
// names the key whose limit it hit; a release and a refund give back to
// every key of the chain; the keys' spend includes the keys below them.
func testKeyChainBudget(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	at := time.Now()
	root := domain.KeyLimit{Prefix: "mgk_root", DailyCreditLimit: credits("10")}
	child := domain.KeyLimit{Prefix: "mgk_child", DailyCreditLimit: credits("10")}
	grand := domain.KeyLimit{Prefix: "mgk_grand", DailyCreditLimit: credits("10")}
	sibling := domain.KeyLimit{Prefix: "mgk_sibling", DailyCreditLimit: credits("10")}
	ofGrand, ofChild := []domain.KeyLimit{child, root}, []domain.KeyLimit{root}

	refunded := chainHold(grand, ofGrand, "6", at)
	for _, h := range []domain.Hold{refunded, chainHold(sibling, ofChild, "3", at)} {
		if err := s.Hold(ctx, user, h); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Hold(ctx, user, chainHold(child, ofChild, "2", at))
	var over *domain.KeyBudgetExceededError
	if !errors.As(err, &over) || over.KeyPrefix != root.Prefix || !over.Above || !over.Spent.Equal(credits("9")) || !over.Limit.Equal(credits("10")) {
		t.Fatalf("a child's hold past the root's limit = %+v (%v); want KeyBudgetExceededError naming %s above, spent 9 of 10", over, err, root.Prefix)
	}
	checkAccount(t, s, user, "91", "9", "100", "0") // the refused hold changed nothing
	spend, err := s.KeySpend(ctx, user, domain.UsageDay(at))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"mgk_root": "9", "mgk_child": "6", "mgk_grand": "6", "mgk_sibling": "3"} {
		if !spend[p].Equal(credits(want)) {
			t.Errorf("%s spent %s, want %s (its own holds and those below it)", p, spend[p], want)
		}
	}
	if _, err := s.Refund(ctx, user, refunded.WorkID); err != nil {
		t.Fatal(err)
	}
	spend, err = s.KeySpend(ctx, user, domain.UsageDay(at))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"mgk_root": "3", "mgk_child": "0", "mgk_grand": "0"} {
		if !spend[p].Equal(credits(want)) {
			t.Errorf("after the refund %s spent %s, want %s", p, spend[p], want)
		}
	}
	if err := s.Hold(ctx, user, chainHold(child, ofChild, "7", at)); err != nil {
		t.Fatalf("a hold the refund made room for: %v", err)
	}
	// The root's own limit counts its own holds too; a hold past the
	// child's own (lower) limit names the child.
	lowChild := domain.KeyLimit{Prefix: "mgk_low", DailyCreditLimit: credits("1")}
	err = s.Hold(ctx, user, chainHold(lowChild, []domain.KeyLimit{{Prefix: "mgk_unlimited"}}, "1.5", at))
	if !errors.As(err, &over) || over.KeyPrefix != lowChild.Prefix || over.Above {
		t.Errorf("a hold past the key's own limit = %v; want it named, not above", err)
	}
	// Open holds read back with their chain, so the sweeper's release
	// gives back to the same keys.
	holds, err := s.AccountHolds(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range holds {
		if h.KeyPrefix == "mgk_child" && (len(h.KeyAncestors) != 1 || h.KeyAncestors[0].Prefix != root.Prefix) {
			t.Errorf("the child's hold reads back with ancestors %+v, want %s", h.KeyAncestors, root.Prefix)
		}
	}
}

// Concurrent holds through every key of a tree, each key with the root's
// whole limit, never take the tree past the root's limit.
func testConcurrentKeyChainBudget(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	root := domain.KeyLimit{Prefix: "mgk_croot", DailyCreditLimit: credits("5")}
	const workers = 24
	var ok, over atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			<-start
			key := domain.KeyLimit{Prefix: fmt.Sprintf("mgk_c%d", i%4), DailyCreditLimit: credits("5")}
			err := s.Hold(ctx, user, chainHold(key, []domain.KeyLimit{root}, "1", time.Now()))
			var exceeded *domain.KeyBudgetExceededError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &exceeded):
				over.Add(1)
			default:
				t.Errorf("Hold: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != 5 || over.Load() != workers-5 {
		t.Errorf("%d holds through 4 children went through and %d were over budget; want 5 (the root's limit) and %d", ok.Load(), over.Load(), workers-5)
	}
	checkAccount(t, s, user, "95", "5", "100", "0")
}

func testVerifyAll(t *testing.T, s store.Store) {
	v, err := ledger.Verify(context.Background(), s, "")
	if err != nil {
		t.Fatal(err)
	}
	if v.Accounts < 10 || v.Entries < v.Accounts {
		t.Errorf("verified %d accounts and %d entries; the suite made more", v.Accounts, v.Entries)
	}
	for _, d := range v.Discrepancies {
		t.Errorf("journal of %s, entry %d: %s", d.UserID, d.Seq, d.Problem)
	}
}
