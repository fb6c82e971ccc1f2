package domain_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// A scene's state embeds its UpstreamJob, and the local store keeps it as
// JSON: rows written before (upstream_id, not the job's own "id") read
// the same, and rows written now keep those names, so a store read by the
// code of either side of a deploy sees every field.
func TestSceneStateKeepsItsStoredJSONNames(t *testing.T) {
	const stored = `{"status":"processing","upstream_id":"up-2","upstream":"fal-main",` +
		`"cancel_url":"https://q.example/r/up-2/cancel","status_url":"https://q.example/r/up-2/status",` +
		`"response_url":"https://q.example/r/up-2","submitting":true}`
	want := domain.SceneState{Status: domain.StatusProcessing, Upstream: "fal-main", Submitting: true,
		UpstreamJob: domain.UpstreamJob{ID: "up-2", CancelURL: "https://q.example/r/up-2/cancel",
			StatusURL: "https://q.example/r/up-2/status", ResponseURL: "https://q.example/r/up-2"}}
	var got domain.SceneState
	if err := json.Unmarshal([]byte(stored), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %+v, want %+v", got, want)
	}
	b, err := json.Marshal(map[int]domain.SceneState{1: want})
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]map[string]any
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	var before map[string]any
	if err := json.Unmarshal([]byte(stored), &before); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(written["1"], before) {
		t.Errorf("wrote %s, want the stored names %s", b, stored)
	}
	if run := want.Run(); run.Upstream != "fal-main" || len(run.Jobs) != 1 || run.Jobs[0] != want.UpstreamJob {
		t.Errorf("run %+v, want the scene's one job at fal-main", run)
	}
	if run := (domain.SceneState{Upstream: "fal-main", Submitting: true}).Run(); len(run.Jobs) != 0 {
		t.Errorf("run of a scene with no job recorded %+v, want no jobs", run)
	}
}

func TestRegenerateWorkIDsReadBack(t *testing.T) {
	id := domain.RegenerateWorkID("4f1c2a", 2, 3)
	if v, n, r, ok := domain.RegenerateOf(id); !ok || v != "4f1c2a" || n != 2 || r != 3 {
		t.Errorf("RegenerateOf(%q) = %q, %d, %d, %v; want the video 4f1c2a, scene 2, revision 3", id, v, n, r, ok)
	}
	for _, other := range []string{"4f1c2a", "4f1c2a#scene-2", "4f1c2a#scene-2-r1", "#scene-2-r3", "4f1c2a#scene-0-r3",
		"4f1c2a#scene-2-r3x", "4f1c2a#scene-02-r3", "4f1c2a#scene-2-r+3", "4f1c2a#texts"} {
		if _, _, _, ok := domain.RegenerateOf(other); ok {
			t.Errorf("RegenerateOf(%q) reads as a regenerate's work id; want not", other)
		}
	}
}

// TestFinalEventIsOneOfTheKindsEvents: the event a final record sends is
// one the API documents for its kind, one for each final status.
func TestFinalEventIsOneOfTheKindsEvents(t *testing.T) {
	for _, c := range []struct {
		kind   domain.WorkKind
		events []string
	}{
		{domain.WorkGeneration, domain.GenerationEvents},
		{domain.WorkLongVideo, domain.LongVideoEvents},
	} {
		var got []string
		for _, s := range []domain.Status{domain.StatusCompleted, domain.StatusFailed, domain.StatusCanceled} {
			got = append(got, domain.FinalEvent(c.kind, s))
		}
		if !slices.Equal(got, c.events) {
			t.Errorf("%s: the final events are %v; the documented ones %v", c.kind, got, c.events)
		}
	}
}
