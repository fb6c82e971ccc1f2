package store_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func TestWindowPageEndsWhereTheWindowOrTheLimitDoes(t *testing.T) {
	base := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	cursorOf := func(n int) store.Cursor {
		return store.Cursor{CreatedAt: base.Add(-time.Duration(n) * time.Second), ID: strconv.Itoa(n)}
	}
	last := cursorOf(99) // the window's last record examined
	tests := []struct {
		name     string
		matched  []int
		limit    int
		more     bool
		want     []int
		wantNext store.Cursor // zero: the list ends
	}{
		{"more matches than the limit: after the last returned", []int{3, 7, 8}, 2, true, []int{3, 7}, cursorOf(7)},
		{"as many as the limit, more records: after the last examined", []int{3, 7}, 2, true, []int{3, 7}, last},
		{"none, more records: an empty page that goes on", nil, 2, true, nil, last},
		{"the window ended the list", []int{3}, 2, false, []int{3}, store.Cursor{}},
		{"more matches than the limit at the list's end", []int{3, 7, 8}, 2, false, []int{3, 7}, cursorOf(7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := store.WindowPage(tt.matched, tt.limit, cursorOf, last, tt.more)
			if !slices.Equal(p.Items, tt.want) {
				t.Errorf("items %v, want %v", p.Items, tt.want)
			}
			want := ""
			if tt.wantNext != (store.Cursor{}) {
				want = tt.wantNext.Encode()
			}
			if p.Next != want {
				t.Errorf("next %q, want %q", p.Next, want)
			}
		})
	}
}

func TestAFilteredQueryExaminesExamineLimitRecords(t *testing.T) {
	for _, tt := range []struct {
		q    store.ListQuery
		want int
	}{
		{store.ListQuery{Limit: 7}, 7},
		{store.ListQuery{Limit: 7, Status: "completed"}, store.ExamineLimit},
		{store.ListQuery{Limit: 100, Model: "zeta"}, store.ExamineLimit},
	} {
		if got := tt.q.Window(); got != tt.want {
			t.Errorf("%+v: window %d, want %d", tt.q, got, tt.want)
		}
	}
	if got := (store.JournalQuery{Limit: 3, WorkID: "w"}).Window(); got != store.ExamineLimit {
		t.Errorf("journal by work: window %d, want %d", got, store.ExamineLimit)
	}
	if got := (store.JournalQuery{Limit: 3, From: time.Now()}).Window(); got != 3 {
		t.Errorf("journal by time (a key range, not a filter): window %d, want 3", got)
	}
}
