package runtime_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

func TestCancelRefundsAndAFinishedOneIsAConflict(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	slow := imageBody("a slow sunrise [simulate:slow]")
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, slow)
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	canceled := call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", owner.APIKey, nil)
	if canceled.status != http.StatusOK || canceled.str("status") != "canceled" {
		t.Fatalf("cancel: HTTP %d %s", canceled.status, canceled.body)
	}
	if a := account(t, rt, owner.UserID); !a.Balance.Equal(credits("1000")) || !a.Held.IsZero() {
		t.Errorf("after cancel: balance %s held %s; want everything back", a.Balance, a.Held)
	}
	if again := call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", owner.APIKey, nil); again.status != http.StatusConflict ||
		again.str("error", "code") != "conflict" {
		t.Errorf("second cancel: HTTP %d %s; want 409", again.status, again.body)
	}
	// The upstream job was stopped too, and the poller, once it has had
	// its look, leaves it canceled.
	g, err := rt.Store.GetGeneration(context.Background(), created.str("uuid"))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Condition(t, 30*time.Second, "the upstream job "+g.UpstreamID+" to be canceled", func() bool {
		p, _ := rt.Simulator.Lookup(g.UpstreamID)
		return p.Status == "canceled"
	})
	waitQueueEmpty(t, rt)
	if v := call(t, rt, http.MethodGet, "/api/generations/status/"+created.str("uuid"), owner.APIKey, nil); v.str("status") != "canceled" {
		t.Errorf("later: %s", v.body)
	}
	// Someone else's generation is not found.
	stranger := newAccount(t, rt, domain.PlanEnterprise, 10)
	if a := call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", stranger.APIKey, nil); a.status != http.StatusNotFound {
		t.Errorf("stranger's cancel: HTTP %d", a.status)
	}

	story := storyBody("tides", "en", true, "auto", []storyScene{{1, "waves [simulate:slow]"}, {2, "gulls [simulate:slow]"}})
	video := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story)
	if video.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", video.status, video.body)
	}
	if !waitfor.Condition(t, time.Minute, "both scenes submitted", func() bool {
		v, err := rt.Store.GetLongVideo(context.Background(), video.str("id"))
		return err == nil && v.SceneStatus[1].ID != "" && v.SceneStatus[2].ID != ""
	}) {
		t.FailNow()
	}
	stopped := call(t, rt, http.MethodPost, "/api/long-story/videos/"+video.str("id")+"/cancel", owner.APIKey, nil)
	if stopped.status != http.StatusOK || stopped.str("status") != "canceled" {
		t.Fatalf("cancel video: HTTP %d %s", stopped.status, stopped.body)
	}
	if a := account(t, rt, owner.UserID); !a.Balance.Equal(credits("1000")) || !a.Held.IsZero() {
		t.Errorf("after the video's cancel: balance %s held %s", a.Balance, a.Held)
	}
	if e, ok := rt.Workflow.Execution(video.str("id")); ok {
		select {
		case <-e.Done():
		case <-time.After(10 * time.Second):
			t.Error("the execution still runs after the cancel")
		}
	}
	if again := call(t, rt, http.MethodPost, "/api/long-story/videos/"+video.str("id")+"/cancel", owner.APIKey, nil); again.status != http.StatusConflict {
		t.Errorf("second video cancel: HTTP %d", again.status)
	}
}
