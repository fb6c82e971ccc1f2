package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func newLongVideo(t *testing.T, s store.Store, userID, model string, created time.Time, w domain.Webhook) domain.LongVideo {
	t.Helper()
	v := domain.LongVideo{ID: uuid.NewString(), UserID: userID, Prompt: "p", Model: model, LanguageCode: "en",
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "a"}, {SceneNumber: 2, Prompt: "b"}}, Status: domain.StatusProcessing,
		CreditsHeld: credits("10"), CreatedAt: created, UpdatedAt: created, Deadline: created.Add(time.Hour), Webhook: w}
	if err := s.CreateLongVideo(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	return v
}

func testLongVideos(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := newAccount(t, s, domain.PlanFree, "0")
	v := domain.LongVideo{ID: uuid.NewString(), UserID: id, Prompt: "the sea", Model: "beta-2", LanguageCode: "es",
		EnableNarration: true, VideoStyle: "documentary", Studio: domain.Studio{AspectRatio: domain.AspectPortrait, Captions: domain.CaptionsBurned, Transition: domain.TransitionCrossfade, Voice: "matthew"},
		Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}, {SceneNumber: 2, Prompt: "gulls", Narration: "Las gaviotas.", Model: "delta-1-pro"}},
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
		!got.EnableNarration || got.VideoStyle != "documentary" || got.Studio != v.Studio || len(got.Scenes) != 2 ||
		got.Scenes[1] != v.Scenes[1] || got.Status != domain.StatusProcessing || !got.CreditsHeld.Equal(v.CreditsHeld) ||
		!got.CreatedAt.Equal(now) || !got.Deadline.Equal(v.Deadline) {
		t.Errorf("stored long video = %+v, want %+v", got, v)
	}
	if _, err := s.GetLongVideo(ctx, uuid.NewString()); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetLongVideo(missing) = %v, want ErrNotFound", err)
	}
	done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/v.mp4"}, TotalDuration: 10.04}
	if err := s.FinishLongVideo(ctx, v.ID, done, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusFailed, Error: "x"}, now); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("second FinishLongVideo = %v, want ErrConflict", err)
	}
	got, _ = s.GetLongVideo(ctx, v.ID)
	if got.Status != domain.StatusCompleted || got.FinalVideoURL != done.OutputURLs[0] || got.TotalDuration != 10.04 || got.Error != "" {
		t.Errorf("finished long video = %+v", got)
	}
}

// LongTextsVideo is a long video of the longest texts the API takes: 20
// scenes of 2,000-character prompts (4-byte characters) with narration.
func LongTextsVideo(userID string, created time.Time) domain.LongVideo {
	v := domain.LongVideo{ID: uuid.NewString(), UserID: userID, Prompt: strings.Repeat("a long story, ", 140), Model: "beta-2",
		LanguageCode: "en", EnableNarration: true, Status: domain.StatusProcessing, CreditsHeld: credits("200"),
		CreatedAt: created, UpdatedAt: created, Deadline: created.Add(time.Hour)}
	for n := 1; n <= 20; n++ {
		v.Scenes = append(v.Scenes, domain.Scene{SceneNumber: n, Prompt: strings.Repeat("🌊", 2000), Narration: strings.Repeat("waves. ", 50)})
		if n%2 == 0 {
			v.Scenes[n-1].Model = "delta-1-pro" // a scene's own model is a text kept with it
		}
	}
	return v
}

// testLongVideoTexts: a video's texts come back whole however long they
// are, after its scenes' updates too; a list shows its scenes.
func testLongVideoTexts(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	v := LongTextsVideo(user, now)
	if err := s.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateLongVideo(ctx, v); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Errorf("second CreateLongVideo = %v, want ErrAlreadyExists", err)
	}
	for n := 1; n <= len(v.Scenes); n++ {
		if err := s.SetSceneStatus(ctx, v.ID, n, domain.SceneState{Status: domain.StatusProcessing, UpstreamJob: domain.UpstreamJob{ID: fmt.Sprintf("up-%d", n)}}, now); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetLongVideo(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Prompt != v.Prompt || !reflect.DeepEqual(got.Scenes, v.Scenes) || len(got.SceneStatus) != len(v.Scenes) {
		t.Errorf("the video of long texts comes back with a %d-byte prompt, %d scenes (equal: %v) and %d scene states; want them whole",
			len(got.Prompt), len(got.Scenes), reflect.DeepEqual(got.Scenes, v.Scenes), len(got.SceneStatus))
	}
	page, err := s.ListLongVideos(ctx, store.ListQuery{UserID: user, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != v.ID || len(page.Items[0].Scenes) != len(v.Scenes) || page.Items[0].Scenes[19].SceneNumber != 20 {
		t.Errorf("the list shows %+v; want the video with its %d scenes' numbers", page.Items, len(v.Scenes))
	}
	if _, err := s.GetLongVideo(ctx, v.ID+"#texts"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetLongVideo of a key that is no video's = %v, want ErrNotFound", err)
	}
}

func testListLongVideos(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	var want []string
	for i := 0; i < 7; i++ {
		model := "beta-2"
		if i%2 == 1 {
			model = "alpha-3.1-fast"
		}
		v := newLongVideo(t, s, user, model, now.Add(time.Duration(i)*time.Minute), domain.Webhook{})
		if model == "beta-2" {
			want = append([]string{v.ID}, want...)
		}
	}
	got := pageAll(t, 3, func(cursor string) (store.Page[domain.LongVideo], error) {
		return s.ListLongVideos(ctx, store.ListQuery{UserID: user, Limit: 3, Model: "beta-2", Cursor: cursor})
	}, func(v domain.LongVideo) string { return v.ID })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v (beta-2, newest first)", got, want)
	}
}

func testSceneStatus(t *testing.T, s store.Store) {
	ctx := context.Background()
	user := newAccount(t, s, domain.PlanFree, "0")
	v := newLongVideo(t, s, user, "beta-2", now, domain.Webhook{})
	for _, step := range []struct {
		scene int
		state domain.SceneState
	}{
		{1, domain.SceneState{Status: domain.StatusProcessing, UpstreamJob: domain.UpstreamJob{ID: "up-1"}}},
		{2, domain.SceneState{Status: domain.StatusProcessing, Upstream: "fal-main", Submitting: true}},
		{2, domain.SceneState{Status: domain.StatusProcessing, UpstreamJob: domain.UpstreamJob{ID: "up-2", CancelURL: "https://q.example/a/requests/up-2/cancel", StatusURL: "https://q.example/a/requests/up-2/status", ResponseURL: "https://q.example/a/requests/up-2"}, Upstream: "fal-main"}},
		{1, domain.SceneState{Status: domain.StatusCompleted, UpstreamJob: domain.UpstreamJob{ID: "up-1"}}},
		{3, domain.SceneState{Status: domain.StatusProcessing, Upstream: "replicate-main", Submitting: true}},
	} {
		if err := s.SetSceneStatus(ctx, v.ID, step.scene, step.state, now); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetLongVideo(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]domain.SceneState{1: {Status: domain.StatusCompleted, UpstreamJob: domain.UpstreamJob{ID: "up-1"}}, 2: {Status: domain.StatusProcessing, UpstreamJob: domain.UpstreamJob{ID: "up-2", CancelURL: "https://q.example/a/requests/up-2/cancel", StatusURL: "https://q.example/a/requests/up-2/status", ResponseURL: "https://q.example/a/requests/up-2"}, Upstream: "fal-main"},
		3: {Status: domain.StatusProcessing, Upstream: "replicate-main", Submitting: true}}
	if !reflect.DeepEqual(got.SceneStatus, want) {
		t.Errorf("scene status = %v, want %v", got.SceneStatus, want)
	}
	if err := s.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusFailed, Error: "x"}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSceneStatus(ctx, v.ID, 2, domain.SceneState{Status: domain.StatusCompleted}, now); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("scene status after the end = %v, want ErrConflict", err)
	}
	if err := s.SetSceneStatus(ctx, uuid.NewString(), 1, domain.SceneState{Status: domain.StatusCompleted}, now); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("scene status of a missing video = %v, want ErrNotFound", err)
	}
}
