// Package storetest is the conformance suite that every store adapter must
// pass. Each adapter's test calls Run with a fresh store.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/core/store"
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
		{"LongInputRoundTrips", testLongInputRoundTrips},
		{"InputObjectIsKept", testInputObjectIsKept},
		{"LongVideosRoundTripAndFinishOnce", testLongVideos},
		{"RateLimitCountsPerAccountAndMinute", testRateLimits},
		{"PollChainAdmitsEachAttemptOnce", testPollChain},
		{"GenerationIDsCountPerAccount", testGenerationIDsPerAccount},
		{"ListGenerationsPagesNewestFirstWithFilters", testListGenerations},
		{"ListLongVideosPagesNewestFirst", testListLongVideos},
		{"LongVideoTextsComeBackWhole", testLongVideoTexts},
		{"FilteredListsExamineABoundedWindow", testFilteredListsExamineABoundedWindow},
		{"SceneStatusWhileProcessingOnly", testSceneStatus},
		{"RegenerateHoldsOneSceneOfACompletedVideo", testRegenerate},
		{"WebhookSecretAndAttempts", testWebhooks},
		{"IdempotencyKeyClaimedOnceAnsweredAgain", testIdempotency},
		{"IdempotentAnswersOverTheBoundAreNotKept", testIdempotencyBound},
		{"CaptureCountsThisMonthsUsage", testUsage},
		{"JournalRecordsEveryMovement", testJournal},
		{"JournalPagesAndFilters", testJournalQueries},
		{"FilteredJournalExaminesABoundedWindow", testFilteredJournalExaminesABoundedWindow},
		{"UsageCountsByDayModelAndKey", testUsageCounts},
		{"UsageCountsOfManyModelsAndKeys", testUsageCountsOfManyPairs},
		{"KeyBudgetRefusesPastTheDailyLimit", testKeyBudget},
		{"ConcurrentHoldsNeverPassAKeysBudget", testConcurrentKeyBudget},
		{"KeyChainBudgetBoundsEveryKeyAbove", testKeyChainBudget},
		{"ConcurrentHoldsOfAKeyTreeNeverPassTheRootsLimit", testConcurrentKeyChainBudget},
		{"SlotsNeverExceedTheLimitAndServeWaitersInOrder", testSlots},
		{"SlotsOfWorkThatIsGoneAreFreed", testSlotsOfGoneWork},
		{"SweeperFreesTheSlotsOfWorkItEnds", testSweeperFreesSlots},
		{"OpenStreamsNeverPassTheLimitAndLapse", testStreams},
		{"SweeperSettlesRegenerateHoldsByTheirVideo", testSweeperRegenerates},
		{"SweeperSendsTheFinalWebhook", testSweeperSendsTheFinalWebhook},
		{"UpstreamJobIsRecordedOnce", testUpstreamIDOnce},
		{"GenerationProgressOnlyGrows", testGenerationProgressOnlyGrows},
		{"GenerationCancelAtIsKept", testGenerationCancelAtIsKept},
		{"RestartListsGenerationsInFlight", testRestartListsGenerations},
		{"RestartListsLongVideosInFlight", testRestartListsLongVideos},
		{"CompletedOutputsKeepTheirExpiry", testOutputExpiry},
		{"OutputRemovalOnlyMovesForward", testOutputRemoval},
		{"FinishingClaimAndCancelExcludeEachOther", testFinishingClaim},
		{"AccountsKeepTheirOutputRetention", testOutputRetention},
		// Last: every account the tests above made.
		{"LedgerVerifiesForEveryAccount", testVerifyAll},
	}
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
	verifyJournal(t, s, userID)
	return a
}

// verifyJournal replays the account's journal against its totals and holds
// (what `mediagen ledger verify` does) and fails on any discrepancy.
func verifyJournal(t *testing.T, s store.Store, userID string) {
	t.Helper()
	v, err := ledger.Verify(context.Background(), s, userID)
	if err != nil {
		t.Fatalf("ledger.Verify: %v", err)
	}
	for _, d := range v.Discrepancies {
		t.Errorf("journal of %s, entry %d: %s", d.UserID, d.Seq, d.Problem)
	}
}

// pageAll follows the cursors to the end and returns the ids in order.
func pageAll[T any](t *testing.T, limit int, list func(cursor string) (store.Page[T], error), id func(T) string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the cursors never end")
		}
		p, err := list(cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > limit {
			t.Fatalf("page of %d items, limit %d", len(p.Items), limit)
		}
		for _, it := range p.Items {
			ids = append(ids, id(it))
		}
		if p.Next == "" {
			return ids
		}
		cursor = p.Next
	}
}

func idsOf[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}
