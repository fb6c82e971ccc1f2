package runtime_test

import (
	"bytes"
	"context"
	"image/color"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/simulator"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// regeneratePath is the regenerate route of scene n of video id.
func regeneratePath(id, n string) string {
	return "/api/long-story/videos/" + id + "/scenes/" + n + "/regenerate"
}

// waitRegenerated polls the status route until the video has no regenerate
// running.
func waitRegenerated(t *testing.T, rt *runtime.Runtime, key, id string) answer {
	t.Helper()
	a, ok := waitfor.Value(t, 3*time.Minute, "the regenerate of "+id+" to end", func() (answer, bool) {
		a := call(t, rt, http.MethodGet, "/api/long-story/videos/"+id, key, nil)
		_, running := a.decoded["regenerating"]
		return a, a.status != http.StatusOK || !running
	})
	if !ok {
		t.FailNow()
	}
	if a.status != http.StatusOK {
		t.Fatalf("status of %s: HTTP %d %s", id, a.status, a.body)
	}
	return a
}

// fetch is the body of GET url, which must answer 200.
func fetch(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d, %v", url, resp.StatusCode, err)
	}
	return raw
}

// sceneColour is the colour the simulator paints the scene of the video
// with prompt p (the theme and style as storyBody's).
func sceneColour(theme, style string, n int, p string) color.RGBA {
	return simulator.ColorFor(longform.ScenePrompt(style, theme, domain.Scene{SceneNumber: n, Prompt: p}))
}

func near(a, b color.RGBA) bool {
	return diff(a.R, b.R) <= 12 && diff(a.G, b.G) <= 12 && diff(a.B, b.B) <= 12
}

// TestRegeneratingASceneChangesOnlyItsSpanAndItsCharge is issue 28 item 6
// through the HTTP API: a regenerate of scene 2 of a completed 3-scene
// video holds and charges that scene's price alone (its own journal
// work), keeps serving the old video while it runs, and then serves a new
// revision in which only scene 2's span shows and says something new.
// Refused requests change nothing, and a cancel mid-regenerate gives back
// only the regenerate's hold.
func TestRegeneratingASceneChangesOnlyItsSpanAndItsCharge(t *testing.T) {
	ctx := context.Background()
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	key := owner.APIKey
	const theme, style = "A day at the seaside", "documentary"
	scenes := []storyScene{{1, "waves roll onto an empty beach"}, {2, "gulls circle over the pier"}, {3, "the sun sets behind the lighthouse"}}
	created := call(t, rt, http.MethodPost, "/api/long-story/videos", key, storyBody(theme, "en", true, style, scenes))
	if created.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", created.status, created.body)
	}
	id := created.str("video_id")

	// A video not completed yet (its scene held until canceled): a 409,
	// and nothing moves.
	pending := call(t, rt, http.MethodPost, "/api/long-story/videos", key,
		storyBody("tides", "en", false, "auto", []storyScene{{1, "waves [simulate:hold]"}}))
	if pending.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", pending.status, pending.body)
	}
	heldBefore := account(t, rt, owner.UserID)
	checkEnvelope(t, call(t, rt, http.MethodPost, regeneratePath(pending.str("video_id"), "1"), key, nil), http.StatusConflict)
	if a := account(t, rt, owner.UserID); !a.Balance.Equal(heldBefore.Balance) || !a.Held.Equal(heldBefore.Held) {
		t.Errorf("the refused regenerate of a video processing moved credits: balance %s → %s, held %s → %s",
			heldBefore.Balance, a.Balance, heldBefore.Held, a.Held)
	}
	if a := call(t, rt, http.MethodPost, "/api/long-story/videos/"+pending.str("video_id")+"/cancel", key, nil); a.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", a.status, a.body)
	}
	first := waitStory(t, rt, key, id)
	if first.str("status") != "completed" || first.decoded["revision"] != 1.0 {
		t.Fatalf("video: %s; want completed at revision 1", first.body)
	}
	oldURL := first.str("final_video_url")
	dir := t.TempDir()
	oldPath, ok := download(t, oldURL, dir, "r1.mp4")
	if !ok {
		t.FailNow()
	}
	oldBytes, err := os.ReadFile(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	books := func() (domain.Account, domain.LongVideo) {
		t.Helper()
		v, err := rt.Store.GetLongVideo(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return settledAccount(t, rt, owner.UserID), v
	}
	completed, recorded := books()

	// Refused: each is its status and changes neither the books nor the video.
	stranger := newAccount(t, rt, domain.PlanEnterprise, 100)
	refused := []struct {
		name, key, id, scene string
		body                 any
		status               int
	}{
		{"another account's video", stranger.APIKey, id, "2", nil, http.StatusNotFound},
		{"an unknown video", key, "00000000-0000-4000-8000-000000000000", "2", nil, http.StatusNotFound},
		{"a scene the video does not have", key, id, "4", nil, http.StatusBadRequest},
		{"a scene that is not a number", key, id, "two", malformed(nil), http.StatusBadRequest},
		{"an unknown field", key, id, "2", malformed(map[string]any{"prompt": "gulls", "model": "delta-1-pro"}), http.StatusBadRequest},
		{"an empty prompt", key, id, "2", malformed(map[string]any{"prompt": ""}), http.StatusBadRequest},
		{"a narration too long for the scene", key, id, "2", malformed(map[string]any{"narration": strings.Repeat("the gulls cry ", 20)}), http.StatusBadRequest},
	}
	for _, r := range refused {
		checkEnvelope(t, call(t, rt, http.MethodPost, regeneratePath(r.id, r.scene), r.key, r.body), r.status)
		if a, v := books(); !a.Balance.Equal(completed.Balance) || !a.Captured.Equal(completed.Captured) || !reflect.DeepEqual(v, recorded) {
			t.Errorf("%s: the refused regenerate changed the balance %s → %s, captured %s → %s, or the video", r.name,
				completed.Balance, a.Balance, completed.Captured, a.Captured)
		}
	}

	// One scene costs what a one-scene video of the model costs.
	est := call(t, rt, http.MethodPost, "/api/long-story/videos/estimate", key, map[string]any{"model": "beta-2", "scene_count": 1})
	if est.status != http.StatusOK {
		t.Fatalf("estimate: HTTP %d %s", est.status, est.body)
	}
	price := decimal.NewFromFloat(est.decoded["credits"].(map[string]any)["total"].(float64))

	// A regenerate whose job never ends: it runs until it is canceled.
	held := call(t, rt, http.MethodPost, regeneratePath(id, "2"), key, map[string]any{"prompt": "gulls on the pier [simulate:hold]"})
	if held.status != http.StatusAccepted || held.str("status") != "completed" || held.decoded["revision"] != 1.0 ||
		held.str("final_video_url") != oldURL || held.str("regenerating", "status") != "processing" {
		t.Fatalf("regenerate: HTTP %d %s; want 202, completed at revision 1 with its video, regenerating", held.status, held.body)
	}
	if r, _ := held.decoded["regenerating"].(map[string]any); r["scene_number"] != 2.0 || r["revision"] != 2.0 {
		t.Errorf("regenerating %v, want scene 2 to revision 2", r)
	}
	if a := account(t, rt, owner.UserID); !a.Held.Equal(price) || !completed.Balance.Sub(a.Balance).Equal(price) {
		t.Errorf("while it runs: held %s, balance %s → %s; want the scene's price %s held", a.Held, completed.Balance, a.Balance, price)
	}
	if !waitfor.Condition(t, time.Minute, "the regenerate's scene to be submitted", func() bool {
		v, err := rt.Store.GetLongVideo(ctx, id)
		return err == nil && v.Regenerating != nil && v.Regenerating.State.ID != ""
	}) {
		t.FailNow()
	}
	if got := fetch(t, oldURL); !bytes.Equal(got, oldBytes) {
		t.Errorf("the old final_video_url serves %d other bytes while the regenerate runs", len(got))
	}
	during := account(t, rt, owner.UserID)
	duringVideo, _ := rt.Store.GetLongVideo(ctx, id)
	for name, a := range map[string]answer{
		"a second regenerate":   call(t, rt, http.MethodPost, regeneratePath(id, "1"), key, nil),
		"a delete of its files": call(t, rt, http.MethodDelete, "/api/long-story/videos/"+id+"/output", key, nil),
	} {
		checkEnvelope(t, a, http.StatusConflict)
		v, _ := rt.Store.GetLongVideo(ctx, id)
		if b := account(t, rt, owner.UserID); !b.Balance.Equal(during.Balance) || !b.Held.Equal(during.Held) || !reflect.DeepEqual(v, duringVideo) {
			t.Errorf("%s during the regenerate moved credits (balance %s → %s, held %s → %s) or changed the video", name,
				during.Balance, b.Balance, during.Held, b.Held)
		}
	}
	// The cancel ends only the regenerate: the video stays completed at
	// revision 1 with its video, and only the scene's hold comes back.
	canceled := call(t, rt, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", key, nil)
	if _, running := canceled.decoded["regenerating"]; canceled.status != http.StatusOK || canceled.str("status") != "completed" ||
		canceled.decoded["revision"] != 1.0 || canceled.str("final_video_url") != oldURL || running {
		t.Fatalf("cancel: HTTP %d %s; want completed at revision 1 with its video, nothing regenerating", canceled.status, canceled.body)
	}
	if e, ok := rt.Workflow.Execution(longform.RegenerateExecution(id, 2)); ok {
		select {
		case <-e.Done():
		case <-time.After(30 * time.Second):
			t.Error("the regenerate's execution still runs after the cancel")
		}
	}
	if a := settledAccount(t, rt, owner.UserID); !a.Balance.Equal(completed.Balance) || !a.Captured.Equal(completed.Captured) {
		t.Errorf("after the cancel: balance %s captured %s; want %s and %s as before the regenerate",
			a.Balance, a.Captured, completed.Balance, completed.Captured)
	}
	if got := fetch(t, oldURL); !bytes.Equal(got, oldBytes) {
		t.Error("the old final_video_url serves other bytes after the cancel")
	}

	// The regenerate that completes: a new prompt and a new narration.
	const newPrompt, newNarration = "a red kite over the dunes", "A kite climbs into the wind and hangs there."
	body := map[string]any{"prompt": newPrompt, "narration": newNarration}
	retry := map[string]string{"Idempotency-Key": "regenerate-scene-2"}
	started := callHeaders(t, rt, http.MethodPost, regeneratePath(id, "2"), key, body, retry)
	if started.status != http.StatusAccepted || started.str("regenerating", "status") != "processing" {
		t.Fatalf("regenerate: HTTP %d %s", started.status, started.body)
	}
	// A retry with its Idempotency-Key gets the first answer again and
	// starts (and holds) nothing more: the charge below is one scene's.
	if again := callHeaders(t, rt, http.MethodPost, regeneratePath(id, "2"), key, body, retry); again.status != http.StatusAccepted ||
		again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, started.body) {
		t.Errorf("the retry answered HTTP %d (replayed %q) %s; want the first answer replayed", again.status, again.header.Get("Idempotent-Replayed"), again.body)
	}
	after := waitRegenerated(t, rt, key, id)
	newURL := after.str("final_video_url")
	if after.str("status") != "completed" || after.decoded["revision"] != 3.0 || newURL == oldURL || !strings.HasSuffix(newURL, "/r3/final.mp4") {
		t.Fatalf("after the regenerate: %s; want completed at revision 3 (2 was canceled) with a new final_video_url", after.body)
	}
	charged := settledAccount(t, rt, owner.UserID)
	if !completed.Balance.Sub(charged.Balance).Equal(price) || !charged.Captured.Sub(completed.Captured).Equal(price) {
		t.Errorf("charged: balance %s → %s, captured %s → %s; want only the scene's price %s",
			completed.Balance, charged.Balance, completed.Captured, charged.Captured, price)
	}
	work := domain.RegenerateWorkID(id, 2, 3)
	entries := transactions(t, rt, key, "&work_id="+url.QueryEscape(work))
	if len(entries) != 2 || entries[0]["type"] != "capture" || entries[1]["type"] != "hold" || entries[0]["work_id"] != work ||
		!credits(entries[0]["amount"].(string)).Equal(price) {
		t.Errorf("the journal of %s = %v; want its hold and its capture of %s", work, entries, price)
	}
	if canceledWork := transactions(t, rt, key, "&work_id="+url.QueryEscape(domain.RegenerateWorkID(id, 2, 2))); len(canceledWork) != 2 ||
		canceledWork[0]["type"] != "release" {
		t.Errorf("the journal of the canceled regenerate = %v; want its hold and its release", canceledWork)
	}
	if resp, err := http.Get(oldURL); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("the previous revision's final video answers HTTP %d after the new one is served; want it deleted (404)", resp.StatusCode)
		}
	}

	// Only scene 2's span of the video changed.
	newPath, ok := download(t, newURL, dir, "r3.mp4")
	if !ok {
		t.FailNow()
	}
	ff := ffmpeg.Runner{}
	for n := 1; n <= 3; n++ {
		at := float64(n-1)*longform.SceneSeconds + longform.SceneSeconds/2.0
		was, err := ff.PixelAt(ctx, oldPath, at, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		is, err := ff.PixelAt(ctx, newPath, at, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := sceneColour(theme, style, n, scenes[n-1].prompt)
		if n == 2 {
			want = sceneColour(theme, style, 2, newPrompt)
		}
		if !near(is, want) || (n != 2 && !near(is, was)) || (n == 2 && near(is, was)) {
			t.Errorf("second %.1f (scene %d) shows %v, was %v; want %v", at, n, is, was, want)
		}
	}
	// Only scene 2 says something new: its own narration, heard for as
	// long as it takes to say; the others as before.
	oldLevels, newLevels := audioLevels(t, oldPath), audioLevels(t, newPath)
	for n := 1; n <= 3; n++ {
		from := float64((n - 1) * longform.SceneSeconds)
		_, wasEnd, ok1 := heard(oldLevels, from, from+longform.SceneSeconds, -45)
		_, isEnd, ok2 := heard(newLevels, from, from+longform.SceneSeconds, -45)
		if !ok1 || !ok2 {
			t.Errorf("scene %d: no narration heard (before %v, after %v)", n, ok1, ok2)
			continue
		}
		if same := math.Abs(isEnd-wasEnd) < 0.1; same != (n != 2) {
			t.Errorf("scene %d's narration ended at %.2f s, now at %.2f s; want it changed only in scene 2", n, wasEnd, isEnd)
		}
	}
	captions := string(fetch(t, after.str("captions_url")))
	if !strings.Contains(captions, "A kite climbs into the wind") || !strings.Contains(captions, scenes[0].prompt) || strings.Contains(captions, scenes[1].prompt) {
		t.Errorf("the new captions do not say scene 2's new narration beside the others':\n%s", captions)
	}
	if got := sceneStates(t, after); got[2] != "completed" || len(got) != 3 {
		t.Errorf("scenes after the regenerate = %v", got)
	}
}

// TestTheEventStreamFollowsARegenerateToItsEnd: the stream of a completed
// video with a scene regenerate running stays open (its views completed,
// with regenerating) until the regenerate ends, then sends the view
// without it and ends.
func TestTheEventStreamFollowsARegenerateToItsEnd(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	cfg := storyConfig()
	cfg.StreamClock = clk
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	created := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("a harbour", "en", false, "cinematic", []storyScene{{1, "boats"}}))
	if created.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", created.status, created.body)
	}
	id := created.str("video_id")
	if v := waitStory(t, rt, owner.APIKey, id); v.str("status") != "completed" {
		t.Fatalf("video: %s", v.body)
	}
	if a := call(t, rt, http.MethodPost, regeneratePath(id, "1"), owner.APIKey, map[string]any{"prompt": "boats [simulate:hold]"}); a.status != http.StatusAccepted {
		t.Fatalf("regenerate: HTTP %d %s", a.status, a.body)
	}
	_, blocks := eventStream(t, rt, "/api/long-story/videos/"+id+"/events", owner.APIKey, "")
	first, ok := nextEvent(t, blocks)
	if !ok || first.event != "completed" || !strings.Contains(first.data, `"regenerating":{`) {
		t.Fatalf("first event %+v (open %v); want the completed view with regenerating", first, ok)
	}
	if c := call(t, rt, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
	tick(t, clk, time.Second)
	last, ok := nextEvent(t, blocks)
	if !ok || last.event != "completed" || strings.Contains(last.data, "regenerating") || last.id <= first.id {
		t.Fatalf("after the cancel: %+v (open %v); want the completed view without regenerating, id above %d", last, ok, first.id)
	}
	if b, ok := nextBlock(t, blocks); ok {
		t.Errorf("after the regenerate ended the stream goes on: %+v", b)
	}
}
