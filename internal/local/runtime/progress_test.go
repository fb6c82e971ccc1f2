package runtime_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// A video's progress is the provider's own figure, as its logs say it
// (Replicate's prediction logs, fal's queue status with logs=1), not the
// estimate from the typical duration: with the service's clock standing
// still the estimate stays at 5 %, and the status view and the event
// stream show the provider's 45 % once a poll read it; it never goes back,
// and a cancel ends it at 100.
func TestAVideosProgressIsTheProvidersOwnFigureOnBothProtocols(t *testing.T) {
	frozen := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt, _ := routed(t, runtime.Config{Clock: frozen.Now, NoUpstreamWebhooks: true}, func(v catalog.Variant, fal, rep map[string]any) []any {
		if v.Version == "beta-2" {
			return []any{fal}
		}
		return []any{rep}
	})
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	for _, c := range []struct {
		protocol, model, version string
		input                    map[string]any
	}{
		{"replicate", "provider-d", "video-01", map[string]any{"prompt": "waves on a beach [simulate:progress=45]"}},
		{"fal", "provider-b", "beta-2", map[string]any{"prompt": "a city at night [simulate:progress=45]", "seconds": "4", "aspect_ratio": "portrait"}},
	} {
		t.Run(c.protocol, func(t *testing.T) {
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey,
				map[string]any{"model": c.model, "model_version": c.version, "input": c.input})
			if a.status != http.StatusOK {
				t.Fatalf("generate: HTTP %d %s", a.status, a.body)
			}
			id := a.str("uuid")
			status := "/api/generations/status/" + id
			view, ok := waitfor.Value(t, 2*time.Minute, "the provider's 45 % in the status view", func() (answer, bool) {
				v := call(t, rt, http.MethodGet, status, owner.APIKey, nil)
				p, _ := v.decoded["progress"].(float64)
				return v, v.status != http.StatusOK || p >= 45
			})
			if !ok {
				t.Fatalf("the status view never showed the provider's progress: %s", view.body)
			}
			if p, _ := view.decoded["progress"].(float64); p != 45 || view.str("status") != "processing" {
				t.Errorf("status view %s; want processing at the provider's 45 %%", view.body)
			}
			// The stream's first event is the same view.
			_, blocks := eventStream(t, rt, "/api/generations/"+id+"/events", owner.APIKey, "")
			if ev, ok := nextEvent(t, blocks); !ok || !strings.Contains(ev.data, `"progress":45`) {
				t.Errorf("the stream's first event %+v, want the view at 45 %%", ev)
			}
			if c := call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
				t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
			}
			if v := call(t, rt, http.MethodGet, status, owner.APIKey, nil); v.decoded["progress"] != 100.0 || v.str("status") != "canceled" {
				t.Errorf("after the cancel: %s; want canceled at 100", v.body)
			}
		})
	}
}

// A long video's progress counts its running scenes by their provider's
// own figure: two scenes each held at 50 % are half of the scenes' 90 %.
func TestALongVideosProgressCountsItsScenesOwnProgress(t *testing.T) {
	rt := start(t, runtime.Config{})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100000)
	created := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("a harbour", "en", false, "cinematic", []storyScene{{1, "boats [simulate:progress=50]"}, {2, "gulls [simulate:progress=50]"}}))
	if created.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", created.status, created.body)
	}
	id := created.str("video_id")
	view, ok := waitfor.Value(t, 2*time.Minute, "both scenes' 50 % in the video's progress", func() (answer, bool) {
		v := call(t, rt, http.MethodGet, "/api/long-story/videos/"+id, owner.APIKey, nil)
		p, _ := v.decoded["progress"].(float64)
		return v, v.status != http.StatusOK || p >= 45
	})
	if p, _ := view.decoded["progress"].(float64); !ok || p != 45 || view.str("status") != "processing" {
		t.Errorf("the video reads %s; want processing at 45 (two scenes at 50 %% of the scenes' 90)", view.body)
	}
	// Each scene says its own progress, in the status view and in the
	// video's event stream alike.
	scenesAt50 := func(where string, v map[string]any) {
		t.Helper()
		scenes, _ := v["scenes"].([]any)
		if len(scenes) != 2 {
			t.Fatalf("%s: scenes %v, want both", where, v["scenes"])
		}
		for _, s := range scenes {
			sc, _ := s.(map[string]any)
			if sc["progress"] != 50.0 || sc["status"] != "processing" {
				t.Errorf("%s: scene %v; want processing at progress 50", where, sc)
			}
		}
	}
	scenesAt50("the status view", view.decoded)
	_, blocks := eventStream(t, rt, "/api/long-story/videos/"+id+"/events", owner.APIKey, "")
	ev, open := nextEvent(t, blocks)
	var streamed map[string]any
	if err := json.Unmarshal([]byte(ev.data), &streamed); !open || err != nil {
		t.Fatalf("the stream's first event %+v (open %v): %v", ev, open, err)
	}
	scenesAt50("the event stream", streamed)
	if c := call(t, rt, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
}
