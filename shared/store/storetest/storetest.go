// Package storetest is the conformance suite that every store adapter must
// pass. Each adapter's test calls Run with a fresh store.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
	"github.com/mediagen-dev/mediagen/shared/sweeper"
)

// Run checks every guarantee of store.Store on s.
func Run(t *testing.T, s store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"AccountsCreateAndRead", testAccounts},
		{"GrantIsIdempotentByGrantID", testGrant},
		{"HoldShortOfCreditsChangesNothing", testHoldInsufficient},
		{"HoldCaptureReleaseSettleExactlyOnce", testHoldLifecycle},
		{"ConcurrentHoldsNeverOverspend", testConcurrentHolds},
		{"ConcurrentSettlementsSettleOnce", testConcurrentSettle},
		{"SweeperSettlesAbandonedHolds", testSweeper},
		{"APIKeysStoreHashRevokeAndList", testAPIKeys},
		{"GenerationsRoundTripAndFinishOnce", testGenerations},
		{"LongVideosRoundTripAndFinishOnce", testLongVideos},
		{"RateLimitCountsPerAccountAndMinute", testRateLimits},
		{"PollChainAdmitsEachAttemptOnce", testPollChain},
		{"GenerationIDsCountPerAccount", testGenerationIDsPerAccount},
	}
	tests = append(tests, featureTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, s) })
	}
}

var now = time.Date(2026, 11, 21, 12, 30, 15, 123456000, time.UTC)

func credits(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// newAccount creates an account with the given credits granted.
func newAccount(t *testing.T, s store.Store, plan domain.Plan, grant string) string {
	t.Helper()
	ctx := context.Background()
	id := "user-" + uuid.NewString()
	if err := s.CreateAccount(ctx, domain.Account{UserID: id, Plan: plan, CreatedAt: now}); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if grant != "0" {
		if _, err := s.Grant(ctx, id, "initial-"+id, credits(grant)); err != nil {
			t.Fatalf("Grant: %v", err)
		}
	}
	return id
}

// checkAccount reads the account and checks its totals and the invariant
// granted = balance + held + captured.
func checkAccount(t *testing.T, s store.Store, userID, balance, held, granted, captured string) domain.Account {
	t.Helper()
	a, err := s.GetAccount(context.Background(), userID)
	if err != nil {
		t.Fatalf("GetAccount: %v", err)
	}
	got := []decimal.Decimal{a.Balance, a.Held, a.Granted, a.Captured}
	want := []string{balance, held, granted, captured}
	names := []string{"balance", "held", "granted", "captured"}
	for i := range got {
		if !got[i].Equal(credits(want[i])) {
			t.Errorf("%s = %s, want %s", names[i], got[i], want[i])
		}
	}
	if !a.Granted.Equal(a.Balance.Add(a.Held).Add(a.Captured)) {
		t.Errorf("invariant broken: granted %s != balance %s + held %s + captured %s", a.Granted, a.Balance, a.Held, a.Captured)
	}
	holds, err := s.AccountHolds(context.Background(), userID)
	if err != nil {
		t.Fatalf("AccountHolds: %v", err)
	}
	sum := decimal.Zero
	for _, h := range holds {
		sum = sum.Add(h.Amount)
	}
	if !sum.Equal(a.Held) {
		t.Errorf("open holds sum to %s, held total is %s", sum, a.Held)
	}
	return a
}

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

func testAccounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := "user-" + uuid.NewString()
	want := domain.Account{UserID: id, Plan: domain.PlanEnterprise, CustomRateLimit: 500, CreatedAt: now}
	if err := s.CreateAccount(ctx, want); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if err := s.CreateAccount(ctx, want); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Fatalf("second CreateAccount = %v, want ErrAlreadyExists", err)
	}
	got := checkAccount(t, s, id, "0", "0", "0", "0")
	if got.Plan != domain.PlanEnterprise || got.CustomRateLimit != 500 || got.RateLimit() != 500 || !got.CreatedAt.Equal(now) {
		t.Errorf("account = %+v, want plan enterprise, limit 500, created %v", got, now)
	}
	if _, err := s.GetAccount(ctx, "user-missing-"+uuid.NewString()); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetAccount(missing) = %v, want ErrNotFound", err)
	}
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
	checkAccount(t, s, id, "93", "7", "100", "0")

	sw := &sweeper.Sweeper{Store: s, Grace: 10 * time.Minute, Now: func() time.Time { return now }}
	report, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	// Only this account's holds count: others in the shared store may be swept too.
	checkAccount(t, s, id, "97", "2", "100", "1")
	open := map[string]bool{}
	for _, h := range accountHolds(t, s, id) {
		open[h.WorkID] = true
	}
	if !open[running] || !open[young] || len(open) != 2 {
		t.Errorf("open holds after sweep = %v, want the running and the young one", open)
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
	checkAccount(t, s, id, "97", "2", "100", "1")
}

func testAPIKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	suffix := uuid.NewString()[:8]
	k := domain.APIKey{Hash: "hash-" + uuid.NewString(), Prefix: "mgk_" + suffix, UserID: id, CreatedAt: now}
	if err := s.PutAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetAPIKey(ctx, k.Hash)
	if err != nil || got.UserID != id || got.Prefix != k.Prefix || got.Revoked() || !got.CreatedAt.Equal(now) {
		t.Fatalf("GetAPIKey = %+v, %v", got, err)
	}
	if _, err := s.GetAPIKey(ctx, "hash-missing"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetAPIKey(missing) = %v, want ErrNotFound", err)
	}
	k2 := domain.APIKey{Hash: "hash-" + uuid.NewString(), Prefix: "mgk_2" + suffix, UserID: id, CreatedAt: now.Add(time.Second)}
	if err := s.PutAPIKey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	revokedAt := now.Add(time.Minute)
	if err := s.RevokeAPIKey(ctx, k.Prefix, revokedAt); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIKey(ctx, k.Prefix, revokedAt.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetAPIKey(ctx, k.Hash)
	if !got.Revoked() || !got.RevokedAt.Equal(revokedAt) {
		t.Errorf("revoked at %v, want the first revocation %v", got.RevokedAt, revokedAt)
	}
	if got2, _ := s.GetAPIKey(ctx, k2.Hash); got2.Revoked() {
		t.Error("revoking one key revoked another")
	}
	if err := s.RevokeAPIKey(ctx, "mgk_missing", now); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("RevokeAPIKey(missing) = %v, want ErrNotFound", err)
	}
	keys, err := s.ListAPIKeys(ctx, id)
	if err != nil || len(keys) != 2 || keys[0].Prefix != k.Prefix || keys[1].Prefix != k2.Prefix {
		t.Errorf("ListAPIKeys = %+v, %v; want both keys, oldest first", keys, err)
	}
}

func testGenerations(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	input := json.RawMessage(`{"prompt":"a red fox","seconds":"4","aspect_ratio":"landscape"}`)
	g1 := &domain.Generation{UUID: uuid.NewString(), UserID: id, Model: "provider-b", ModelVersion: "beta-2",
		Kind: domain.MediaVideo, Input: input, ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("40.00"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Minute)}
	if err := s.CreateGeneration(ctx, g1); err != nil {
		t.Fatal(err)
	}
	g2 := *g1
	g2.UUID, g2.ID = uuid.NewString(), 0
	if err := s.CreateGeneration(ctx, &g2); err != nil {
		t.Fatal(err)
	}
	if g1.ID != 1 || g2.ID != 2 {
		t.Errorf("ids %d then %d, want the account's 1 and 2", g1.ID, g2.ID)
	}
	dup := *g1
	if err := s.CreateGeneration(ctx, &dup); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("CreateGeneration with a taken uuid = %v, want ErrAlreadyExists", err)
	}
	got, err := s.GetGeneration(ctx, g1.UUID)
	if err != nil {
		t.Fatal(err)
	}
	byID, err := s.GetGenerationByID(ctx, id, g1.ID)
	if err != nil || byID.UUID != g1.UUID {
		t.Fatalf("GetGenerationByID(%d) = %s, %v", g1.ID, byID.UUID, err)
	}
	var in map[string]any
	if err := json.Unmarshal(got.Input, &in); err != nil || in["prompt"] != "a red fox" {
		t.Errorf("input = %s, want the stored input", got.Input)
	}
	if got.ID != g1.ID || got.UserID != id || got.Model != "provider-b" || got.ModelVersion != "beta-2" ||
		got.Kind != domain.MediaVideo || got.ImageCount != 1 || got.Status != domain.StatusProcessing ||
		!got.CreditsUsed.Equal(credits("40")) || !got.CreatedAt.Equal(now) || !got.Deadline.Equal(g1.Deadline) ||
		len(got.OutputURLs) != 0 || got.UpstreamID != "" || got.Error != "" {
		t.Errorf("stored generation = %+v, want %+v", got, g1)
	}
	for _, missing := range []func() error{
		func() error { _, err := s.GetGeneration(ctx, uuid.NewString()); return err },
		func() error { _, err := s.GetGenerationByID(ctx, id, 1<<40); return err },
		func() error {
			return s.SetUpstreamJobs(ctx, uuid.NewString(), domain.UpstreamRun{Jobs: []domain.UpstreamJob{{ID: "x"}}}, now)
		},
		func() error {
			return s.FinishGeneration(ctx, uuid.NewString(), domain.Outcome{Status: domain.StatusFailed}, now)
		},
	} {
		if err := missing(); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("operation on a missing generation = %v, want ErrNotFound", err)
		}
	}

	later := now.Add(3 * time.Second)
	if err := s.SetUpstreamJobs(ctx, g1.UUID, domain.UpstreamRun{Upstream: "u", Model: "o/m", Jobs: []domain.UpstreamJob{{ID: "up-123"}}}, later); err != nil {
		t.Fatal(err)
	}
	urls := []string{"https://cdn.example/a.mp4"}
	if err := s.FinishGeneration(ctx, g1.UUID, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: urls}, later); err != nil {
		t.Fatal(err)
	}
	err = s.FinishGeneration(ctx, g1.UUID, domain.Outcome{Status: domain.StatusFailed, Error: "late"}, later)
	if !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second FinishGeneration = %v, want ErrConflict", err)
	}
	if err := s.SetUpstreamJobs(ctx, g1.UUID, domain.UpstreamRun{Jobs: []domain.UpstreamJob{{ID: "up-other"}}}, later); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("SetUpstreamJobs after finish = %v, want ErrConflict", err)
	}
	got, _ = s.GetGeneration(ctx, g1.UUID)
	if got.Status != domain.StatusCompleted || got.UpstreamID != "up-123" || len(got.OutputURLs) != 1 ||
		got.OutputURLs[0] != urls[0] || got.Error != "" || !got.UpdatedAt.Equal(later) {
		t.Errorf("finished generation = %+v", got)
	}
	processing, err := s.ProcessingGenerations(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var seen1, seen2 bool
	for _, p := range processing {
		seen1 = seen1 || p.UUID == g1.UUID
		seen2 = seen2 || p.UUID == g2.UUID
		if p.Status != domain.StatusProcessing {
			t.Errorf("ProcessingGenerations listed a %s generation", p.Status)
		}
	}
	if seen1 || !seen2 {
		t.Errorf("ProcessingGenerations saw completed %v, processing %v; want only the processing one", seen1, seen2)
	}
	if err := s.FinishGeneration(ctx, g2.UUID, domain.Outcome{Status: domain.StatusFailed, Error: "upstream said no"}, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetGeneration(ctx, g2.UUID); got.Status != domain.StatusFailed || got.Error != "upstream said no" {
		t.Errorf("failed generation = %s %q", got.Status, got.Error)
	}
}

func testLongVideos(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	v := domain.LongVideo{ID: uuid.NewString(), UserID: id, Prompt: "the sea", Model: "beta-2", LanguageCode: "es",
		EnableNarration: true, VideoStyle: "documentary",
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}, {SceneNumber: 2, Prompt: "gulls", Narration: "Las gaviotas."}},
		Status: domain.StatusProcessing, CreditsHeld: credits("100.50"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := s.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateLongVideo(ctx, v); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("second CreateLongVideo = %v, want ErrAlreadyExists", err)
	}
	got, err := s.GetLongVideo(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.UserID != id || got.Prompt != v.Prompt || got.Model != v.Model || got.LanguageCode != "es" ||
		!got.EnableNarration || got.VideoStyle != "documentary" || len(got.Scenes) != 2 ||
		got.Scenes[1] != v.Scenes[1] || got.Status != domain.StatusProcessing || !got.CreditsHeld.Equal(v.CreditsHeld) ||
		!got.CreatedAt.Equal(now) || !got.Deadline.Equal(v.Deadline) {
		t.Errorf("stored long video = %+v, want %+v", got, v)
	}
	if _, err := s.GetLongVideo(ctx, uuid.NewString()); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetLongVideo(missing) = %v, want ErrNotFound", err)
	}
	processing, err := s.ProcessingLongVideos(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(processing, func(p domain.LongVideo) bool { return p.ID == v.ID }); i < 0 || len(processing[i].Scenes) != 2 {
		t.Errorf("ProcessingLongVideos does not list the processing video with its scenes")
	}
	done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/v.mp4"}, TotalDuration: 10.04}
	if err := s.FinishLongVideo(ctx, v.ID, done, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.ProcessingLongVideos(ctx, 1000); slices.ContainsFunc(after, func(p domain.LongVideo) bool { return p.ID == v.ID }) {
		t.Error("ProcessingLongVideos lists a completed video")
	}
	if err := s.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusFailed, Error: "x"}, now); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second FinishLongVideo = %v, want ErrConflict", err)
	}
	got, _ = s.GetLongVideo(ctx, v.ID)
	if got.Status != domain.StatusCompleted || got.FinalVideoURL != done.OutputURLs[0] || got.TotalDuration != 10.04 || got.Error != "" {
		t.Errorf("finished long video = %+v", got)
	}
}

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

// testGenerationIDsPerAccount: the integer id counts each account's own
// generations, so it says nothing about other accounts, and finding one by
// it never crosses accounts.
func testGenerationIDsPerAccount(t *testing.T, s store.Store) {
	ctx := context.Background()
	a, b := newAccount(t, s, domain.PlanPro, "0"), newAccount(t, s, domain.PlanPro, "0")
	newImage := func(userID string) *domain.Generation {
		return &domain.Generation{UUID: uuid.NewString(), UserID: userID, Model: "provider-a", ModelVersion: "zeta",
			Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"a"}`), ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: credits("5.07"), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(10 * time.Minute)}
	}
	create := func(userID string) *domain.Generation {
		t.Helper()
		g := newImage(userID)
		if err := s.CreateGeneration(ctx, g); err != nil {
			t.Fatalf("CreateGeneration: %v", err)
		}
		return g
	}
	a1, b1, a2 := create(a), create(b), create(a)
	if a1.ID != 1 || b1.ID != 1 || a2.ID != 2 {
		t.Errorf("ids: a's %d and %d, b's %d; want 1 and 2, and 1", a1.ID, a2.ID, b1.ID)
	}
	for _, tt := range []struct {
		user string
		id   int64
		want string
	}{{a, 1, a1.UUID}, {a, 2, a2.UUID}, {b, 1, b1.UUID}} {
		if g, err := s.GetGenerationByID(ctx, tt.user, tt.id); err != nil || g.UUID != tt.want || g.ID != tt.id {
			t.Errorf("GetGenerationByID(%s, %d) = %s (id %d), %v; want %s", tt.user, tt.id, g.UUID, g.ID, err, tt.want)
		}
	}
	if _, err := s.GetGenerationByID(ctx, b, 2); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("b's generation 2 (only a has one) = %v, want ErrNotFound", err)
	}
	// Made at once, an account's generations still take distinct numbers.
	c := newAccount(t, s, domain.PlanPro, "0")
	const n = 20
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newImage(c)
			if err := s.CreateGeneration(ctx, g); err != nil {
				t.Errorf("CreateGeneration: %v", err)
			}
			ids[i] = g.ID
		}()
	}
	wg.Wait()
	slices.Sort(ids)
	for i, id := range ids {
		if id != int64(i+1) {
			t.Fatalf("concurrent ids %v, want 1 to %d once each", ids, n)
		}
	}
}
