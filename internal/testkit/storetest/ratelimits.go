package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func testRateLimits(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := "user-"+uuid.NewString(), "user-"+uuid.NewString()
	minute := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		n, err := s.CountRequest(ctx, a, minute.Add(time.Duration(i)*10*time.Second))
		if err != nil || n != i {
			t.Fatalf("request %d counted as %d, %v", i, n, err)
		}
	}
	if n, _ := s.CountRequest(ctx, b, minute.Add(5*time.Second)); n != 1 {
		t.Errorf("another account's first request counted as %d, want 1", n)
	}
	if n, _ := s.CountRequest(ctx, a, minute.Add(time.Minute)); n != 1 {
		t.Errorf("first request of the next minute counted as %d, want 1", n)
	}
	var wg sync.WaitGroup
	c := "user-" + uuid.NewString()
	seen := make([]int, 50)
	for i := range seen {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			n, err := s.CountRequest(ctx, c, minute)
			if err != nil {
				t.Error(err)
			}
			seen[i] = n
		}(i)
	}
	wg.Wait()
	got := map[int]bool{}
	for _, n := range seen {
		got[n] = true
	}
	if len(got) != 50 || !got[1] || !got[50] {
		t.Errorf("50 concurrent requests got counts %v, want each of 1..50 once", fmt.Sprint(seen))
	}
}
