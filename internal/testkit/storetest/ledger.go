package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
)

func accountHolds(t *testing.T, s store.Store, userID string) []domain.Hold {
	t.Helper()
	holds, err := s.AccountHolds(context.Background(), userID)
	if err != nil {
		t.Fatalf("AccountHolds: %v", err)
	}
	return holds
}

func hold(workID, amount string) domain.Hold {
	return domain.Hold{WorkID: workID, Kind: domain.WorkGeneration, Amount: credits(amount), CreatedAt: now}
}

func testGrant(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	applied, err := s.Grant(ctx, id, "grant-1", credits("12.50"))
	if err != nil || !applied {
		t.Fatalf("Grant = %v, %v; want applied", applied, err)
	}
	applied, err = s.Grant(ctx, id, "grant-1", credits("12.50"))
	if err != nil || applied {
		t.Fatalf("repeated Grant = %v, %v; want not applied, no error", applied, err)
	}
	if _, err := s.Grant(ctx, id, "grant-2", credits("0.25")); err != nil {
		t.Fatal(err)
	}
	checkAccount(t, s, id, "12.75", "0", "12.75", "0")
	// Grant ids are per account: another account's grant-1 is its own.
	other := newAccount(t, s, domain.PlanFree, "0")
	if applied, err := s.Grant(ctx, other, "grant-1", credits("1")); err != nil || !applied {
		t.Errorf("grant-1 on another account = %v, %v; want applied", applied, err)
	}
	if _, err := s.Grant(ctx, "user-missing-"+uuid.NewString(), "grant-x", credits("1")); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Grant to a missing account = %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"-1", "0.001"} {
		if _, err := s.Grant(ctx, id, "grant-bad"+bad, credits(bad)); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Grant(%s) = %v, want ErrInvalid", bad, err)
		}
	}
	checkAccount(t, s, id, "12.75", "0", "12.75", "0")
}

func testHoldInsufficient(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "5")
	err := s.Hold(ctx, id, hold(uuid.NewString(), "5.01"))
	var short *domain.InsufficientCreditsError
	if !errors.Is(err, domain.ErrInsufficientCredits) || !errors.As(err, &short) {
		t.Fatalf("Hold over the balance = %v, want *InsufficientCreditsError", err)
	}
	if !short.Required.Equal(credits("5.01")) || !short.Available.Equal(credits("5")) {
		t.Errorf("error says required %s available %s, want 5.01 and 5", short.Required, short.Available)
	}
	checkAccount(t, s, id, "5", "0", "5", "0")
	if holds := accountHolds(t, s, id); len(holds) != 0 {
		t.Errorf("failed hold left %d holds", len(holds))
	}
	if err := s.Hold(ctx, "user-missing-"+uuid.NewString(), hold(uuid.NewString(), "1")); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Hold on a missing account = %v, want ErrNotFound", err)
	}
}

func testHoldLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanPro, "100")
	a, b := uuid.NewString(), uuid.NewString()

	if err := s.Hold(ctx, id, hold(a, "30.25")); err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(ctx, id, hold(a, "30.25")); err != nil {
		t.Fatalf("repeated Hold of open work = %v, want nil", err)
	}
	if err := s.Hold(ctx, id, hold(b, "20")); err != nil {
		t.Fatal(err)
	}
	checkAccount(t, s, id, "49.75", "50.25", "100", "0")
	if holds := accountHolds(t, s, id); len(holds) != 2 || holds[0].Kind != domain.WorkGeneration {
		t.Fatalf("holds = %+v, want two generation holds", holds)
	}

	settled, err := s.Capture(ctx, id, a)
	if err != nil || !settled {
		t.Fatalf("Capture = %v, %v; want settled", settled, err)
	}
	for _, op := range []struct {
		name string
		fn   func(context.Context, string, string) (bool, error)
	}{{"Capture", s.Capture}, {"Release", s.Release}} {
		if settled, err := op.fn(ctx, id, a); err != nil || settled {
			t.Errorf("%s after capture = %v, %v; want not settled, no error", op.name, settled, err)
		}
	}
	checkAccount(t, s, id, "49.75", "20", "100", "30.25")

	if settled, err := s.Release(ctx, id, b); err != nil || !settled {
		t.Fatalf("Release = %v, %v; want settled", settled, err)
	}
	if settled, _ := s.Capture(ctx, id, b); settled {
		t.Error("Capture after release settled again")
	}
	for _, op := range []struct {
		name string
		fn   func(context.Context, string, string) (bool, error)
	}{{"Capture", s.Capture}, {"Release", s.Release}} {
		if settled, err := op.fn(ctx, id, uuid.NewString()); err != nil || settled {
			t.Errorf("%s of a hold never made = %v, %v; want not settled, no error", op.name, settled, err)
		}
		if _, err := op.fn(ctx, "user-missing-"+uuid.NewString(), b); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s on a missing account = %v, want ErrNotFound", op.name, err)
		}
	}
	checkAccount(t, s, id, "69.75", "0", "100", "30.25")
}

func testConcurrentHolds(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "10")
	const workers = 200
	var ok, short, other atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	stop := make(chan struct{})
	negative := make(chan string, 1)
	go func() { // watch the balance while the holds race
		for {
			select {
			case <-stop:
				return
			default:
			}
			if a, err := s.GetAccount(ctx, id); err == nil && a.Balance.IsNegative() {
				select {
				case negative <- a.Balance.String():
				default:
				}
			}
		}
	}()
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.Hold(ctx, id, hold(uuid.NewString(), "1"))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, domain.ErrInsufficientCredits):
				short.Add(1)
			default:
				other.Add(1)
				t.Errorf("Hold: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	t.Logf("%d holds: %d succeeded, %d insufficient, %d other errors", workers, ok.Load(), short.Load(), other.Load())
	if ok.Load() != 10 || short.Load() != workers-10 {
		t.Errorf("succeeded %d, insufficient %d; want 10 and %d", ok.Load(), short.Load(), workers-10)
	}
	select {
	case b := <-negative:
		t.Errorf("balance was seen at %s", b)
	default:
	}
	checkAccount(t, s, id, "0", "10", "10", "0")
	if holds := accountHolds(t, s, id); len(holds) != 10 {
		t.Errorf("%d open holds, want 10", len(holds))
	}
}

func testConcurrentSettle(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "10")
	work := uuid.NewString()
	if err := s.Hold(ctx, id, hold(work, "4")); err != nil {
		t.Fatal(err)
	}
	var settled atomic.Int32
	var captures atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			op := s.Release
			if i%2 == 0 {
				op = s.Capture
			}
			done, err := op(ctx, id, work)
			if err != nil {
				t.Errorf("settle: %v", err)
			}
			if done {
				settled.Add(1)
				if i%2 == 0 {
					captures.Add(1)
				}
			}
		}(i)
	}
	wg.Wait()
	if settled.Load() != 1 {
		t.Fatalf("%d settlements of one hold, want exactly 1", settled.Load())
	}
	if captures.Load() == 1 {
		checkAccount(t, s, id, "6", "0", "10", "4")
	} else {
		checkAccount(t, s, id, "10", "0", "10", "0")
	}
}

func testSweeper(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanPro, "100")
	old := now.Add(-time.Hour)
	mk := func(status domain.Status, deadline time.Time) string {
		g := &domain.Generation{UUID: uuid.NewString(), UserID: id, Model: "provider-a", ModelVersion: "zeta",
			Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"p"}`), ImageCount: 1,
			Status: domain.StatusProcessing, CreditsUsed: credits("1"), CreatedAt: old, UpdatedAt: old, Deadline: deadline}
		if err := s.Hold(ctx, id, domain.Hold{WorkID: g.UUID, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: old}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
		if status != domain.StatusProcessing {
			if err := s.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: status}, old); err != nil {
				t.Fatal(err)
			}
		}
		return g.UUID
	}
	completed := mk(domain.StatusCompleted, now.Add(time.Hour))
	failed := mk(domain.StatusFailed, now.Add(time.Hour))
	running := mk(domain.StatusProcessing, now.Add(time.Hour))
	overdue := mk(domain.StatusProcessing, now.Add(-time.Minute))
	// A crash between the hold and the record write leaves a hold with no work.
	orphan := uuid.NewString()
	if err := s.Hold(ctx, id, domain.Hold{WorkID: orphan, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: old}); err != nil {
		t.Fatal(err)
	}
	orphanVideo := uuid.NewString()
	if err := s.Hold(ctx, id, domain.Hold{WorkID: orphanVideo, Kind: domain.WorkLongVideo, Amount: credits("1"), CreatedAt: old}); err != nil {
		t.Fatal(err)
	}
	// Within the grace period a hold without work may still get its record.
	young := uuid.NewString()
	if err := s.Hold(ctx, id, domain.Hold{WorkID: young, Kind: domain.WorkGeneration, Amount: credits("1"), CreatedAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// Claimed as finishing, its outputs may be stored: past its deadline
	// it is left to the poller, failed or not, never refunded here.
	finishing := mk(domain.StatusProcessing, now.Add(-time.Minute))
	failedFinishing := mk(domain.StatusProcessing, now.Add(time.Hour))
	for _, g := range []string{finishing, failedFinishing} {
		if err := s.ClaimGenerationFinish(ctx, g, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishGeneration(ctx, failedFinishing, domain.Outcome{Status: domain.StatusFailed}, old); err != nil {
		t.Fatal(err)
	}
	checkAccount(t, s, id, "91", "9", "100", "0")

	sw := &sweeper.Sweeper{Store: s, Grace: 10 * time.Minute, Now: func() time.Time { return now }}
	report, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	// Only this account's holds count: others in the shared store may be swept too.
	checkAccount(t, s, id, "95", "4", "100", "1")
	open := map[string]bool{}
	for _, h := range accountHolds(t, s, id) {
		open[h.WorkID] = true
	}
	if !open[running] || !open[young] || !open[finishing] || !open[failedFinishing] || len(open) != 4 {
		t.Errorf("open holds after sweep = %v, want the running, the young and the two finishing ones", open)
	}
	if g, err := s.GetGeneration(ctx, finishing); err != nil || g.Status != domain.StatusProcessing {
		t.Errorf("the finishing generation past its deadline = %s, %v; want it left processing", g.Status, err)
	}
	for _, w := range []string{completed, failed, overdue, orphan, orphanVideo} {
		if open[w] {
			t.Errorf("hold %s still open", w)
		}
	}
	g, err := s.GetGeneration(ctx, overdue)
	if err != nil || g.Status != domain.StatusFailed || g.Error != domain.TimedOutError {
		t.Errorf("overdue generation = %s %q, %v; want failed %q", g.Status, g.Error, err, domain.TimedOutError)
	}
	if report.Captured < 1 || report.Released < 4 || report.TimedOut < 1 {
		t.Errorf("report = %+v, want at least 1 captured, 4 released, 1 timed out", report)
	}
	// A second sweep finds nothing more to settle for this account.
	if _, err := sw.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	checkAccount(t, s, id, "95", "4", "100", "1")
}

func testUsage(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "100")
	for i, capture := range []bool{true, true, false} {
		work := fmt.Sprintf("work-%d-%s", i, uuid.NewString())
		if err := s.Hold(ctx, user, domain.Hold{WorkID: work, Kind: domain.WorkGeneration, Amount: credits("2.50"), CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		op := s.Release
		if capture {
			op = s.Capture
		}
		if _, err := op(ctx, user, work); err != nil {
			t.Fatal(err)
		}
	}
	a, err := s.GetAccount(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	u := a.Usage[domain.UsageMonth(time.Now())]
	if !u.Credits.Equal(credits("5")) || u.Jobs != 2 {
		t.Errorf("this month's usage = %s credits, %d jobs; want 5.00 and 2 (captures only)", u.Credits, u.Jobs)
	}
}
