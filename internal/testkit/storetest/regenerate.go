package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
)

// testRegenerate: a regenerate of one scene runs only on a completed video
// whose latest revision, made or begun, is the one before it, one at a
// time (a failed one's number is not used again); the video stays completed at
// its revision and final video while it runs and when it fails; a
// completed one moves the video to its revision with its final video and
// the scene's new texts, the other scenes' untouched. Short texts and
// texts kept apart alike.
func testRegenerate(t *testing.T, s store.Store) {
	for _, tt := range []struct {
		name  string
		video func(user string) domain.LongVideo
	}{
		{"short texts", func(user string) domain.LongVideo {
			return domain.LongVideo{ID: uuid.NewString(), UserID: user, Prompt: "p", Model: "beta-2", LanguageCode: "en",
				EnableNarration: true, Status: domain.StatusProcessing, CreditsHeld: credits("10"), CreatedAt: now, UpdatedAt: now,
				Deadline: now.Add(time.Hour), Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "a", Narration: "one."},
					{SceneNumber: 2, Prompt: "b", Narration: "two."}, {SceneNumber: 3, Prompt: "c", Model: "delta-1-pro"}}}
		}},
		{"long texts", func(user string) domain.LongVideo { return LongTextsVideo(user, now) }},
	} {
		t.Run(tt.name, func(t *testing.T) { regenerateRoundTrip(t, s, tt.video(newAccount(t, s, domain.PlanFree, "0"))) })
	}
}

func regenerateRoundTrip(t *testing.T, s store.Store, v domain.LongVideo) {
	ctx := context.Background()
	if err := s.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	regen := func(revision int, prompt, narration string) domain.Regeneration {
		return domain.Regeneration{SceneNumber: 2, Revision: revision, Prompt: prompt, Narration: narration, Model: "delta-1-pro",
			CreditsHeld: credits("2.50"), StartedAt: now.Add(time.Duration(revision) * time.Hour)}
	}
	wantErr := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s = %v, want %v", what, err, want)
		}
	}
	firstRender := domain.SceneState{Status: domain.StatusCompleted, Upstream: "fal-main", UpstreamJob: domain.UpstreamJob{ID: "up-1"}}
	for n := 1; n <= len(v.Scenes); n++ {
		if err := s.SetSceneStatus(ctx, v.ID, n, firstRender, now); err != nil {
			t.Fatal(err)
		}
	}
	wantErr("BeginRegenerate while processing", s.BeginRegenerate(ctx, v.ID, regen(2, "b2", ""), now), domain.ErrConflict)
	wantErr("BeginRegenerate of a missing video", s.BeginRegenerate(ctx, uuid.NewString(), regen(2, "b2", ""), now), domain.ErrNotFound)
	first := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/r1.mp4"}, TotalDuration: 15.04}
	if err := s.FinishLongVideo(ctx, v.ID, first, now); err != nil {
		t.Fatal(err)
	}
	read := func() domain.LongVideo {
		t.Helper()
		got, err := s.GetLongVideo(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// wantVideo checks what a reader of the status view sees.
	wantVideo := func(when string, revision int, url string, scenes []domain.Scene, running *domain.Regeneration) {
		t.Helper()
		got := read()
		if got.Status != domain.StatusCompleted || got.Revision != revision || got.FinalVideoURL != url || !reflect.DeepEqual(got.Scenes, scenes) {
			t.Errorf("%s: the video is %s at revision %d with %s (scenes as wanted: %v); want completed at %d with %s",
				when, got.Status, got.Revision, got.FinalVideoURL, reflect.DeepEqual(got.Scenes, scenes), revision, url)
		}
		switch r := got.Regenerating; {
		case running == nil && r != nil:
			t.Errorf("%s: a regenerate runs (%+v); want none", when, *r)
		case running != nil && r == nil:
			t.Errorf("%s: no regenerate runs; want %+v", when, *running)
		case running != nil && (r.SceneNumber != running.SceneNumber || r.Revision != running.Revision || r.Prompt != running.Prompt ||
			r.Narration != running.Narration || r.Model != running.Model || !r.CreditsHeld.Equal(running.CreditsHeld) ||
			!r.StartedAt.Equal(running.StartedAt) || !reflect.DeepEqual(r.State, running.State)):
			t.Errorf("%s: the regenerate is %+v; want %+v", when, *r, *running)
		}
	}
	wantVideo("completed", 1, first.OutputURLs[0], v.Scenes, nil)
	wantErr("BeginRegenerate of a revision not next", s.BeginRegenerate(ctx, v.ID, regen(3, "b2", ""), now), domain.ErrConflict)

	// A regenerate that fails leaves the video as it was.
	failing := regen(2, "b2", "two again.")
	if err := s.BeginRegenerate(ctx, v.ID, failing, now); err != nil {
		t.Fatal(err)
	}
	wantErr("a second BeginRegenerate", s.BeginRegenerate(ctx, v.ID, regen(2, "b3", ""), now), domain.ErrConflict)
	wantVideo("regenerating", 1, first.OutputURLs[0], v.Scenes, &failing)
	failing.State = domain.SceneState{Status: domain.StatusProcessing, Upstream: "fal-main",
		UpstreamJob: domain.UpstreamJob{ID: "up-9", StatusURL: "https://q.example/a/requests/up-9/status"}}
	if err := s.SetRegenerateState(ctx, v.ID, 2, failing.State, now); err != nil {
		t.Fatal(err)
	}
	wantErr("SetRegenerateState of another revision", s.SetRegenerateState(ctx, v.ID, 3, failing.State, now), domain.ErrConflict)
	wantErr("SetSceneStatus of a completed video", s.SetSceneStatus(ctx, v.ID, 2, failing.State, now), domain.ErrConflict)
	wantVideo("its job recorded", 1, first.OutputURLs[0], v.Scenes, &failing)
	if err := s.EndRegenerate(ctx, v.ID, 2, domain.Outcome{Status: domain.StatusFailed, Error: "x"}, now); err != nil {
		t.Fatal(err)
	}
	wantErr("a second EndRegenerate", s.EndRegenerate(ctx, v.ID, 2, domain.Outcome{Status: domain.StatusCanceled}, now), domain.ErrConflict)
	wantErr("SetRegenerateState after its end", s.SetRegenerateState(ctx, v.ID, 2, failing.State, now), domain.ErrConflict)
	wantVideo("its regenerate failed", 1, first.OutputURLs[0], v.Scenes, nil)
	if got := read(); got.LastRegenerate != 2 || got.NextRevision() != 3 {
		t.Errorf("after the failed regenerate: last regenerate %d, next revision %d; want 2 and 3", got.LastRegenerate, got.NextRevision())
	}
	// Its number is used up: its execution and its hold are named by it.
	wantErr("BeginRegenerate of the failed one's revision", s.BeginRegenerate(ctx, v.ID, regen(2, "b2", ""), now), domain.ErrConflict)

	// A regenerate that completes moves the video to its revision.
	ok := regen(3, "gulls at dusk", "The gulls return.")
	if err := s.BeginRegenerate(ctx, v.ID, ok, now); err != nil {
		t.Fatal(err)
	}
	if got := read().SceneStatus; !reflect.DeepEqual(got[2], firstRender) {
		t.Errorf("scene 2 after a failed regenerate = %+v, want its first render's %+v", got[2], firstRender)
	}
	job := domain.SceneState{Status: domain.StatusProcessing, Upstream: "replicate-main", UpstreamJob: domain.UpstreamJob{ID: "up-10"}}
	if err := s.SetRegenerateState(ctx, v.ID, 3, job, now); err != nil {
		t.Fatal(err)
	}
	second := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/r3.mp4"}, TotalDuration: 15.08}
	if err := s.EndRegenerate(ctx, v.ID, 3, second, now); err != nil {
		t.Fatal(err)
	}
	wantErr("EndRegenerate once more", s.EndRegenerate(ctx, v.ID, 3, second, now), domain.ErrConflict)
	wantVideo("its regenerate completed", 3, second.OutputURLs[0], ok.Applied(v.Scenes), nil)
	if got := read(); got.TotalDuration != second.TotalDuration {
		t.Errorf("total_duration = %v after the regenerate, want %v", got.TotalDuration, second.TotalDuration)
	}
	// Scene 2's clip is now the regenerate's (its job, revision 3); the
	// others' are still the first render's.
	made := job
	made.Status, made.Revision = domain.StatusCompleted, 3
	if got := read().SceneStatus; !reflect.DeepEqual(got[2], made) || !reflect.DeepEqual(got[1], firstRender) {
		t.Errorf("scene states after the regenerate: 1 = %+v, 2 = %+v; want 1 = %+v, 2 = %+v", got[1], got[2], firstRender, made)
	}
	for _, r := range []int{2, 3} {
		wantErr("BeginRegenerate of a revision used", s.BeginRegenerate(ctx, v.ID, regen(r, "b", ""), now), domain.ErrConflict)
	}
	if err := s.BeginRegenerate(ctx, v.ID, regen(4, "b", ""), now); err != nil {
		t.Errorf("BeginRegenerate of the next revision = %v", err)
	}

	// The files a regenerate reuses are not removed under it, and no
	// regenerate begins on files being removed.
	wantErr("SetLongVideoRemoval while a regenerate runs", s.SetLongVideoRemoval(ctx, v.ID, domain.RemovalRemoving, now), domain.ErrConflict)
	if got := read(); got.Files.Removal != "" {
		t.Errorf("the refused removal left the video's removal %q", got.Files.Removal)
	}
	if err := s.EndRegenerate(ctx, v.ID, 4, domain.Outcome{Status: domain.StatusCanceled}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLongVideoRemoval(ctx, v.ID, domain.RemovalRemoving, now); err != nil {
		t.Fatalf("SetLongVideoRemoval once no regenerate runs = %v", err)
	}
	wantErr("BeginRegenerate of a video whose files are being removed", s.BeginRegenerate(ctx, v.ID, regen(5, "b", ""), now), domain.ErrConflict)
}

// testSweeperRegenerates: a regenerate's hold (its own work, named by
// domain.RegenerateWorkID) is settled by what its video shows: left open
// while the regenerate runs, captured once the video is at its revision,
// released when it ended otherwise; one past its deadline is ended failed,
// its slot freed and its hold released, the video left as it was.
func testSweeperRegenerates(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanPro, "100")
	old := now.Add(-time.Hour)
	upstream := "sweep-regen-" + uuid.NewString()[:8]
	regenerating := func(started time.Time, end domain.Status) (videoID, workID string) {
		t.Helper()
		return newRegenerate(t, s, user, domain.Webhook{}, upstream, old, started, end)
	}
	_, running := regenerating(now.Add(-domain.RegenerateTimeout/2), "")
	overdueVideo, _ := regenerating(now.Add(-domain.RegenerateTimeout-time.Minute), "")
	regenerating(old, domain.StatusCompleted)
	regenerating(old, domain.StatusFailed)
	if ok, err := s.AcquireSlot(ctx, upstream, domain.SceneSlotHolder(overdueVideo, 2), 1, old); err != nil || !ok {
		t.Fatalf("AcquireSlot = %v, %v", ok, err)
	}
	checkAccount(t, s, user, "96", "4", "100", "0")

	sw := &sweeper.Sweeper{Store: s, Slots: s, Grace: 10 * time.Minute, Now: func() time.Time { return now }}
	if _, err := sw.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	// One captured, two released, the running one still held.
	checkAccount(t, s, user, "98", "1", "100", "1")
	holds := accountHolds(t, s, user)
	if len(holds) != 1 || holds[0].WorkID != running {
		t.Errorf("open holds after the sweep = %+v, want only the running regenerate's %s", holds, running)
	}
	v, err := s.GetLongVideo(ctx, overdueVideo)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != domain.StatusCompleted || v.Revision != 1 || v.Regenerating != nil || v.FinalVideoURL != "https://cdn.example/r1.mp4" {
		t.Errorf("the video of the overdue regenerate is %s at revision %d with %s (regenerating: %v); want completed at 1 with its first video",
			v.Status, v.Revision, v.FinalVideoURL, v.Regenerating != nil)
	}
	if ok, err := s.AcquireSlot(ctx, upstream, "another", 1, now); err != nil || !ok {
		t.Errorf("the overdue regenerate's slot is still held after the sweep (AcquireSlot = %v, %v)", ok, err)
	}
}

// newRegenerate makes a completed video of user's, created at created
// with webhook w, and a regenerate of its scene 2 (revision 2, its job at
// upstream) started at started, with the regenerate's open hold (1 credit,
// created at created); end ends it ("" leaves it running).
func newRegenerate(t *testing.T, s store.Store, user string, w domain.Webhook, upstream string, created, started time.Time, end domain.Status) (videoID, workID string) {
	t.Helper()
	ctx := context.Background()
	v := newLongVideo(t, s, user, "beta-2", created, w)
	done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/r1.mp4"}, TotalDuration: 10}
	if err := s.FinishLongVideo(ctx, v.ID, done, created); err != nil {
		t.Fatal(err)
	}
	workID = domain.RegenerateWorkID(v.ID, 2, 2)
	if err := s.Hold(ctx, user, domain.Hold{WorkID: workID, Kind: domain.WorkLongVideo, Amount: credits("1"), CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	r := domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "b2", Model: "beta-2", CreditsHeld: credits("1"), StartedAt: started,
		State: domain.SceneState{Status: domain.StatusProcessing, Upstream: upstream, UpstreamJob: domain.UpstreamJob{ID: "up-" + v.ID}}}
	if err := s.BeginRegenerate(ctx, v.ID, r, started); err != nil {
		t.Fatal(err)
	}
	if end != "" {
		o := domain.Outcome{Status: end, OutputURLs: []string{"https://cdn.example/r2.mp4"}, TotalDuration: 10}
		if err := s.EndRegenerate(ctx, v.ID, 2, o, created); err != nil {
			t.Fatal(err)
		}
	}
	return v.ID, workID
}
