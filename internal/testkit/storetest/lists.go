package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// pages follows a list's cursors to its end and returns each page's items.
func pages[T any](t *testing.T, limit int, list func(cursor string) (store.Page[T], error), id func(T) string) [][]string {
	t.Helper()
	var out [][]string
	cursor := ""
	for len(out) <= 1000 {
		p, err := list(cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > limit {
			t.Fatalf("page of %d items, limit %d", len(p.Items), limit)
		}
		out = append(out, idsOf(p.Items, id))
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
	t.Fatal("the cursors never end")
	return nil
}

func sizes(pages [][]string) []int {
	out := make([]int, len(pages))
	for i, p := range pages {
		out[i] = len(p)
	}
	return out
}

func flat(pages [][]string) []string {
	var out []string
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// A filtered page examines store.ExamineLimit records after its cursor, so
// its cost does not grow with the account's history: it holds the first
// `limit` matches of that window, or fewer (even none) with a cursor after
// the last record examined. Both stores give the same pages, and following
// the cursors lists every match once, newest first.
func testFilteredListsExamineABoundedWindow(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	const n = 250
	// Newest first, the rare version is at 0, 1, 2 and 240; every 9th is
	// completed.
	rare := map[int]bool{0: true, 1: true, 2: true, 240: true}
	newestFirst := make([]domain.Generation, n)
	for pos := n - 1; pos >= 0; pos-- {
		version, status := "zeta", domain.StatusProcessing
		if rare[pos] {
			version = "rare-v"
		}
		if pos%9 == 0 {
			status = domain.StatusCompleted
		}
		newestFirst[pos] = newGeneration(t, s, user, version, status, now.Add(time.Duration(n-pos)*time.Second))
	}
	list := func(q store.ListQuery) func(string) (store.Page[domain.Generation], error) {
		return func(cursor string) (store.Page[domain.Generation], error) {
			q.UserID, q.Cursor = user, cursor
			return s.ListGenerations(ctx, q)
		}
	}
	id := func(g domain.Generation) string { return g.UUID }
	want := func(keep func(domain.Generation) bool) []string {
		var ids []string
		for _, g := range newestFirst {
			if keep(g) {
				ids = append(ids, g.UUID)
			}
		}
		return ids
	}

	got := pages(t, 2, list(store.ListQuery{Limit: 2, Model: "rare-v"}), id)
	// Window 0-99 holds three: the first two; the next window starts after
	// them (2-101): one, and it ends after 101; 102-201: none; 202-249: 240.
	if !reflect.DeepEqual(sizes(got), []int{2, 1, 0, 1}) {
		t.Errorf("model pages of 2 hold %v items, want [2 1 0 1]", sizes(got))
	}
	if w := want(func(g domain.Generation) bool { return g.ModelVersion == "rare-v" }); !reflect.DeepEqual(flat(got), w) {
		t.Errorf("model pages listed %v, want %v", flat(got), w)
	}
	completed := want(func(g domain.Generation) bool { return g.Status == domain.StatusCompleted })
	got = pages(t, 20, list(store.ListQuery{Limit: 20, Status: domain.StatusCompleted}), id)
	if !reflect.DeepEqual(flat(got), completed) {
		t.Errorf("status pages listed %d, want the %d completed newest first", len(flat(got)), len(completed))
	}
	got = pages(t, 100, list(store.ListQuery{Limit: 100, Status: domain.StatusCompleted, Model: "rare-v"}), id)
	if w := []string{newestFirst[0].UUID}; !reflect.DeepEqual(flat(got), w) || !reflect.DeepEqual(sizes(got), []int{1, 0, 0}) {
		t.Errorf("status and model pages hold %v: %v, want [1 0 0]: %v", sizes(got), flat(got), w)
	}
	// Without a filter a page is full until the list ends.
	got = pages(t, 100, list(store.ListQuery{Limit: 100}), id)
	if !reflect.DeepEqual(sizes(got), []int{100, 100, 50}) {
		t.Errorf("unfiltered pages hold %v items, want [100 100 50]", sizes(got))
	}
}

// The journal's type and work filters examine a bounded window too; the
// time range is a key range, not a filter.
func testFilteredJournalExaminesABoundedWindow(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100") // its grant: the oldest entry
	hold := func() string {
		w := uuid.NewString()
		if err := s.Hold(ctx, user, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		return w
	}
	old := hold()
	for i := 0; i < 120; i++ {
		if _, err := s.Grant(ctx, user, "bulk-"+uuid.NewString(), credits("1")); err != nil {
			t.Fatal(err)
		}
	}
	recent := []string{hold(), hold(), hold()}
	// Newest first: the three recent holds (0-2), 120 grants (3-122), the
	// old hold (123), the account's grant (124). Windows of holds in pages
	// of 2: 0-99 holds three, the first two; 2-101: one; 102-124: the old.
	list := func(q store.JournalQuery) func(string) (store.Page[domain.JournalEntry], error) {
		return func(cursor string) (store.Page[domain.JournalEntry], error) {
			q.UserID, q.Cursor = user, cursor
			return s.JournalEntries(ctx, q)
		}
	}
	work := func(e domain.JournalEntry) string { return e.WorkID }
	got := pages(t, 2, list(store.JournalQuery{Limit: 2, Type: domain.EntryHold}), work)
	if !reflect.DeepEqual(sizes(got), []int{2, 1, 1}) {
		t.Errorf("hold pages of 2 hold %v entries, want [2 1 1]", sizes(got))
	}
	if w := []string{recent[2], recent[1], recent[0], old}; !reflect.DeepEqual(flat(got), w) {
		t.Errorf("hold pages listed %v, want %v", flat(got), w)
	}
	got = pages(t, 5, list(store.JournalQuery{Limit: 5, WorkID: old}), work)
	if !reflect.DeepEqual(sizes(got), []int{0, 1}) || !reflect.DeepEqual(flat(got), []string{old}) {
		t.Errorf("one old work's pages hold %v: %v, want [0 1]: its hold", sizes(got), flat(got))
	}
	got = pages(t, 100, list(store.JournalQuery{Limit: 100}), work)
	if !reflect.DeepEqual(sizes(got), []int{100, 25}) {
		t.Errorf("unfiltered pages hold %v entries, want [100 25]", sizes(got))
	}
}
