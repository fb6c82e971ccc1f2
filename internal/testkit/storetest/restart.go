package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// restartLister is what an adapter that the local runtime runs on has
// besides store.Store: the listing of the work in flight that the runtime's
// restart resumes (each adapter's restart.go). The Lambda functions never
// ask for it, so it is no part of store.Store.
type restartLister interface {
	ProcessingGenerations(ctx context.Context, limit int) ([]domain.Generation, error)
	ProcessingLongVideos(ctx context.Context, limit int) ([]domain.LongVideo, error)
}

// listerOf is s's restart listing; an adapter without one is not one the
// local runtime can run on, and the test is skipped.
func listerOf(t *testing.T, s store.Store) restartLister {
	t.Helper()
	l, ok := s.(restartLister)
	if !ok {
		t.Skipf("%T lists no work in flight: the local runtime does not run on it", s)
	}
	return l
}

func testRestartListsGenerations(t *testing.T, s store.Store) {
	l := listerOf(t, s)
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	done := newGeneration(t, s, user, "zeta", domain.StatusCompleted, now)
	inFlight := newGeneration(t, s, user, "zeta", domain.StatusProcessing, now.Add(time.Second))
	// A restart resubmits a generation that waited for a slot from its
	// recorded input, so that comes back whole too, however long.
	long := &domain.Generation{UUID: uuid.NewString(), UserID: user, Model: "provider-x", ModelVersion: "zeta",
		Kind: domain.MediaImage, Input: longInput(), ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: credits("1.00"), CreatedAt: now.Add(2 * time.Second), UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := s.CreateGeneration(ctx, long); err != nil {
		t.Fatal(err)
	}
	processing, err := l.ProcessingGenerations(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var seenDone, seenInFlight, seenLong bool
	for _, p := range processing {
		seenDone = seenDone || p.UUID == done.UUID
		seenInFlight = seenInFlight || p.UUID == inFlight.UUID
		if p.UUID == long.UUID {
			seenLong = string(p.Input) == string(long.Input)
		}
		if p.Status != domain.StatusProcessing {
			t.Errorf("ProcessingGenerations listed a %s generation", p.Status)
		}
	}
	if seenDone || !seenInFlight || !seenLong {
		t.Errorf("ProcessingGenerations saw completed %v, processing %v, the long input whole %v; want only the processing ones, whole",
			seenDone, seenInFlight, seenLong)
	}
}

func testRestartListsLongVideos(t *testing.T, s store.Store) {
	l := listerOf(t, s)
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	v := newLongVideo(t, s, user, "beta-2", now, domain.Webhook{})
	// A restart runs the workflow again from the recorded texts, so those
	// come back whole too, however long.
	long := LongTextsVideo(user, now.Add(time.Second))
	if err := s.CreateLongVideo(ctx, long); err != nil {
		t.Fatal(err)
	}
	processing, err := l.ProcessingLongVideos(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(processing, func(p domain.LongVideo) bool { return p.ID == v.ID }); i < 0 || len(processing[i].Scenes) != 2 {
		t.Errorf("ProcessingLongVideos does not list the processing video with its scenes")
	}
	if i := slices.IndexFunc(processing, func(p domain.LongVideo) bool { return p.ID == long.ID }); i < 0 ||
		processing[i].Prompt != long.Prompt || !slices.Equal(processing[i].Scenes, long.Scenes) {
		t.Errorf("ProcessingLongVideos does not list the video of long texts with its texts whole")
	}
	done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/v.mp4"}, TotalDuration: 10.04}
	if err := s.FinishLongVideo(ctx, v.ID, done, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if after, _ := l.ProcessingLongVideos(ctx, 1000); slices.ContainsFunc(after, func(p domain.LongVideo) bool { return p.ID == v.ID }) {
		t.Error("ProcessingLongVideos lists a completed video")
	}
}
