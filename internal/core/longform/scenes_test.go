package longform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// sceneProvider is a scripted Replicate-protocol upstream: each job's
// reads answer the statuses in script, the last one repeated.
type sceneProvider struct {
	srv     *httptest.Server
	mu      sync.Mutex
	script  []string
	creates int
	reads   map[string]int
	cancels []string
}

func newSceneProvider(t *testing.T, script ...string) *sceneProvider {
	p := &sceneProvider{script: script, reads: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *sceneProvider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/files/"):
		w.Write([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + strings.Repeat("\x00", 64)))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		w.Write([]byte(`{"latest_version":{"openapi_schema":{"components":{"schemas":{"Input":{"properties":` +
			`{"prompt":{"type":"string"},"seconds":{"type":"integer"}}}}}}}}`))
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
		p.cancels = append(p.cancels, strings.Split(r.URL.Path, "/")[3])
		w.Write([]byte(`{"id":"x","status":"canceled"}`))
	case r.Method == http.MethodPost:
		io.Copy(io.Discard, r.Body)
		p.creates++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"job%d","status":"starting"}`, p.creates)
	default:
		id := strings.TrimPrefix(r.URL.Path, "/v1/predictions/")
		st := p.script[min(p.reads[id], len(p.script)-1)]
		p.reads[id]++
		if st == "succeeded" {
			fmt.Fprintf(w, `{"id":%q,"status":"succeeded","output":"%s/files/%s.mp4"}`, id, p.srv.URL, id)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"status":%q,"error":"the model refused"}`, id, st)
	}
}

// recordedQueue keeps what is sent to the poller's queue.
type recordedQueue struct {
	mu   sync.Mutex
	sent []longform.ScenePoll
}

func (q *recordedQueue) Send(_ context.Context, body []byte, _ time.Duration) error {
	var m longform.ScenePoll
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	q.mu.Lock()
	q.sent = append(q.sent, m)
	q.mu.Unlock()
	return nil
}

func (q *recordedQueue) last(t *testing.T) longform.ScenePoll {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.sent) == 0 {
		t.Fatal("no scene poll was enqueued")
	}
	return q.sent[len(q.sent)-1]
}

// tokenCalls stands in for Step Functions' SendTask* calls (a thin wire
// call): tokens in gone are no longer waited on.
type tokenCalls struct {
	mu                             sync.Mutex
	gone                           map[string]bool
	heartbeats                     int
	successes, failures            []string
	lastOutput, lastError, lastWhy string
}

func (c *tokenCalls) check(token string) error {
	if c.gone[token] {
		return fmt.Errorf("task of %s: %w", token, domain.ErrTaskGone)
	}
	return nil
}

func (c *tokenCalls) SendTaskSuccess(_ context.Context, token string, output []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.successes, c.lastOutput = append(c.successes, token), string(output)
	return c.check(token)
}

func (c *tokenCalls) SendTaskFailure(_ context.Context, token, name, cause string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures, c.lastError, c.lastWhy = append(c.failures, token), name, cause
	return c.check(token)
}

func (c *tokenCalls) SendTaskHeartbeat(_ context.Context, token string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heartbeats++
	return c.check(token)
}

type sceneRig struct {
	steps    *longform.Steps
	store    *sqlitestore.Store
	provider *sceneProvider
	queue    *recordedQueue
	tokens   *tokenCalls
	video    domain.LongVideo
}

// newSceneRig is a processing two-scene video on a real store, routed to
// one scripted upstream whose cap is limit (0: none).
func newSceneRig(t *testing.T, limit int, script ...string) *sceneRig {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	p := newSceneProvider(t, script...)
	rc := routing.Single("scripted", routing.ProtocolReplicate, p.srv.URL, []string{p.srv.Listener.Addr().String()})
	rc.Upstreams["scripted"].MaxConcurrent = limit
	router, err := upstream.NewRouter(rc, func(*routing.Upstream) (string, error) { return "tok", nil }, nil,
		upstream.Tuning{Attempts: 1, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(1000)})
	if err != nil {
		t.Fatal(err)
	}
	v := domain.LongVideo{ID: "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43", UserID: acct.UserID, Prompt: "a day at the sea", Model: "beta-2",
		LanguageCode: "en", Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}, {SceneNumber: 2, Prompt: "gulls"}},
		Status: domain.StatusProcessing, CreditsHeld: decimal.NewFromInt(130), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := st.Hold(ctx, v.UserID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateLongVideo(ctx, v); err != nil {
		t.Fatal(err)
	}
	r := &sceneRig{store: st, provider: p, queue: &recordedQueue{}, tokens: &tokenCalls{gone: map[string]bool{}}, video: v}
	r.steps = &longform.Steps{Store: st, Upstream: router, Slots: st, Queue: r.queue, Tokens: r.tokens,
		Copier: &media.Copier{Bucket: objects.MediaBucket(), HTTP: p.srv.Client(), AllowedHosts: rc.OutputHosts(), MaxBytes: 1 << 20, AllowLoopback: true},
		Log:    slog.New(slog.DiscardHandler)}
	return r
}

func (r *sceneRig) scene(t *testing.T, n int) domain.SceneState {
	v, err := r.store.GetLongVideo(context.Background(), r.video.ID)
	if err != nil {
		t.Fatal(err)
	}
	return v.SceneStatus[n]
}

func (r *sceneRig) submit(n int, token string) error {
	_, err := r.steps.SubmitScene(context.Background(), longform.SceneTask{VideoID: r.video.ID, SceneNumber: n, TaskToken: token})
	return err
}

// pollUntilResumed polls the scene's chain until the task is resumed or
// the chain stops.
func (r *sceneRig) pollUntilResumed(t *testing.T) {
	for i := 0; i < 20; i++ {
		before := len(r.queue.sent)
		if err := r.steps.PollScene(context.Background(), r.queue.last(t)); err != nil {
			t.Fatal(err)
		}
		if len(r.tokens.successes)+len(r.tokens.failures) > 0 || len(r.queue.sent) == before {
			return
		}
	}
	t.Fatal("the scene's polls never ended")
}

func TestASceneJobRunsOnceAndResumesItsTask(t *testing.T) {
	r := newSceneRig(t, 0, "processing", "processing", "succeeded")
	if err := r.submit(1, "tok-1"); err != nil {
		t.Fatal(err)
	}
	st := r.scene(t, 1)
	if st.UpstreamID != "job1" || st.Submitting || st.Upstream != "scripted" {
		t.Fatalf("scene state %+v, want job1 recorded", st)
	}
	r.pollUntilResumed(t)
	if len(r.tokens.successes) != 1 || !strings.Contains(r.tokens.lastOutput, `"key":"long-videos/`+r.video.ID+`/scenes/001.mp4"`) {
		t.Fatalf("successes %v output %s, want the clip's key once", r.tokens.successes, r.tokens.lastOutput)
	}
	if r.tokens.heartbeats < 2 {
		t.Errorf("%d heartbeats, want one per poll while the job ran", r.tokens.heartbeats)
	}
	if st := r.scene(t, 1); st.Status != domain.StatusCompleted {
		t.Errorf("scene state %+v, want completed", st)
	}
	if r.provider.creates != 1 {
		t.Errorf("%d creates, want 1", r.provider.creates)
	}
}

func TestARetriedSceneTaskNeverCreatesTwice(t *testing.T) {
	tests := []struct {
		name        string
		before      domain.SceneState
		wantErr     bool
		wantWatched bool
	}{
		{"job recorded: watched again with the new token", domain.SceneState{Status: domain.StatusProcessing, UpstreamID: "job7", Upstream: "scripted"}, false, true},
		{"create sent, answer lost: the scene fails", domain.SceneState{Status: domain.StatusProcessing, Upstream: "scripted", Submitting: true}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSceneRig(t, 0, "processing")
			if err := r.store.SetSceneStatus(context.Background(), r.video.ID, 1, tt.before, time.Now()); err != nil {
				t.Fatal(err)
			}
			err := r.submit(1, "tok-retry")
			var failed *longform.SceneFailedError
			if tt.wantErr != errors.As(err, &failed) {
				t.Fatalf("err = %v, want a SceneFailedError: %v", err, tt.wantErr)
			}
			if r.provider.creates != 0 {
				t.Errorf("%d creates, want none", r.provider.creates)
			}
			if watched := len(r.queue.sent) == 1 && r.queue.sent[0].TaskToken == "tok-retry"; watched != tt.wantWatched {
				t.Errorf("polls enqueued %+v, want the job watched: %v", r.queue.sent, tt.wantWatched)
			}
		})
	}
}

func TestScenesWaitInLineAtTheUpstreamsCap(t *testing.T) {
	r := newSceneRig(t, 1, "processing", "succeeded")
	if err := r.submit(1, "tok-1"); err != nil {
		t.Fatal(err)
	}
	err := r.submit(2, "tok-2")
	var full *longform.SlotsFullError
	if !errors.As(err, &full) || r.provider.creates != 1 {
		t.Fatalf("second scene: err = %v after %d creates, want SlotsFullError and one job", err, r.provider.creates)
	}
	if n, err := r.store.SlotQueuePosition(context.Background(), "scripted", r.video.ID+"#scene-2"); err != nil || n != 1 {
		t.Errorf("scene 2's place in line = %d (%v), want 1", n, err)
	}
	r.pollUntilResumed(t) // scene 1 ends and frees its slot
	if err := r.submit(2, "tok-2b"); err != nil || r.provider.creates != 2 {
		t.Fatalf("after the slot freed: err = %v, %d creates; want scene 2 submitted", err, r.provider.creates)
	}
}

func TestSceneJobEndingBadlyFailsItsTask(t *testing.T) {
	r := newSceneRig(t, 1, "processing", "failed")
	if err := r.submit(1, "tok-1"); err != nil {
		t.Fatal(err)
	}
	r.pollUntilResumed(t)
	if len(r.tokens.failures) != 1 || r.tokens.lastError != "SceneFailedError" || !strings.Contains(r.tokens.lastWhy, "the model refused") {
		t.Fatalf("failures %v (%s: %s), want the provider's reason", r.tokens.failures, r.tokens.lastError, r.tokens.lastWhy)
	}
	if n, _ := r.store.SlotsInUse(context.Background(), "scripted"); n != 0 {
		t.Errorf("%d slots in use after the scene failed, want 0", n)
	}
}

func TestAPollChainWhoseTokenIsGoneStops(t *testing.T) {
	r := newSceneRig(t, 0, "processing")
	if err := r.submit(1, "tok-old"); err != nil {
		t.Fatal(err)
	}
	r.tokens.gone["tok-old"] = true
	sent := len(r.queue.sent)
	if err := r.steps.PollScene(context.Background(), r.queue.last(t)); err != nil {
		t.Fatal(err)
	}
	if len(r.queue.sent) != sent || len(r.provider.reads) != 0 {
		t.Errorf("the chain went on: %d polls enqueued, %d jobs read", len(r.queue.sent)-sent, len(r.provider.reads))
	}
}

func TestAStoppedVideosSceneIsCanceledUpstreamAndFreed(t *testing.T) {
	r := newSceneRig(t, 2, "processing")
	for n := 1; n <= 2; n++ {
		if err := r.submit(n, fmt.Sprintf("tok-%d", n)); err != nil {
			t.Fatal(err)
		}
	}
	view, err := r.steps.MarkFailed(context.Background(), longform.FailTask{VideoID: r.video.ID,
		Failure: longform.Failure{Error: "SceneFailedError", Cause: `{"errorMessage":"scene 2 failed: upstream: no","errorType":"SceneFailedError"}`}})
	if err != nil {
		t.Fatal(err)
	}
	if view.Status != "failed" || view.Error != "scene 2 failed: upstream: no" {
		t.Errorf("view %+v, want failed with the Lambda error's message", view)
	}
	if len(r.provider.cancels) != 2 {
		t.Errorf("canceled %v upstream, want both scene jobs", r.provider.cancels)
	}
	if n, _ := r.store.SlotsInUse(context.Background(), "scripted"); n != 0 {
		t.Errorf("%d slots in use after the video failed, want 0", n)
	}
	// A poll still in flight stops at the failed video and fails its task.
	if err := r.steps.PollScene(context.Background(), r.queue.last(t)); err != nil {
		t.Fatal(err)
	}
	if len(r.tokens.failures) != 1 || len(r.provider.reads) != 0 {
		t.Errorf("task failures %v, jobs read %v: want the task failed without reading the job", r.tokens.failures, r.provider.reads)
	}
}

// MarkFailed's output always carries an error, however the video ended:
// the workflow's Fail state reads its cause from $.error, and a CausePath
// that selects nothing fails the execution with States.Runtime instead of
// LongVideoFailed. The video itself keeps how it ended.
func TestMarkFailedAlwaysYieldsAnError(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		ended domain.Outcome
		says  string
	}{
		{domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://files.example/final.mp4"}, TotalDuration: 10},
			"(the video had already ended completed)"},
		{domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"}, "canceled by the caller"},
		{domain.Outcome{Status: domain.StatusProcessing}, "a step kept failing: finalize kept failing"},
	}
	for _, tt := range tests {
		t.Run(string(tt.ended.Status), func(t *testing.T) {
			r := newSceneRig(t, 0, "processing")
			if tt.ended.Status != domain.StatusProcessing {
				if err := r.store.FinishLongVideo(ctx, r.video.ID, tt.ended, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			view, err := r.steps.MarkFailed(ctx, longform.FailTask{VideoID: r.video.ID,
				Failure: longform.Failure{Error: "TransientError", Cause: "finalize kept failing"}})
			if err != nil {
				t.Fatal(err)
			}
			if view.Error == "" || !strings.Contains(view.Error, tt.says) {
				t.Errorf("MarkFailed on a %s video: %+v, want an error saying %q", tt.ended.Status, view, tt.says)
			}
			v, err := r.store.GetLongVideo(ctx, r.video.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.ended.Status; want != domain.StatusProcessing && v.Status != want {
				t.Errorf("the video is %s, want it left %s", v.Status, want)
			}
		})
	}
}

func TestParseScenePollTellsScenesFromGenerations(t *testing.T) {
	for _, tc := range []struct {
		body        string
		ok, invalid bool
	}{
		{`{"generation_id":"3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7","attempt":1}`, false, false},
		{`{"video_id":"v","scene_number":2,"task_token":"t"}`, true, false},
		{`{"video_id":"v","scene_number":0,"task_token":"t"}`, true, true},
		{`{"video_id":"v","scene_number":1}`, true, true},
		{`not json`, false, false},
	} {
		_, ok, err := longform.ParseScenePoll(tc.body)
		if ok != tc.ok || (err != nil) != tc.invalid {
			t.Errorf("%s: ok %v err %v, want ok %v invalid %v", tc.body, ok, err, tc.ok, tc.invalid)
		}
	}
}
