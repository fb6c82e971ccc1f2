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
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/job"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// sceneProvider is a scripted Replicate-protocol upstream: each job's
// reads answer the statuses in script, the last one repeated.
type sceneProvider struct {
	srv    *httptest.Server
	mu     sync.Mutex
	script []string
	// createStatus, when set, is every create's answer: 500 is a create
	// whose outcome is unknown (a job may have started).
	createStatus int
	creates      int
	bodies       []string // each create's
	reads        map[string]int
	cancels      []string
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
		body, _ := io.ReadAll(r.Body)
		p.bodies = append(p.bodies, string(body))
		p.creates++
		if p.createStatus != 0 {
			w.WriteHeader(p.createStatus)
			return
		}
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
	if st.ID != "job1" || st.Submitting || st.Upstream != "scripted" {
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
		{"job recorded: watched again with the new token", domain.SceneState{Status: domain.StatusProcessing, UpstreamJob: domain.UpstreamJob{ID: "job7"}, Upstream: "scripted"}, false, true},
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

// A create whose answer was lost may have started a paid job: the scene
// fails, and the task delivered again (Lambda's retry, the workflow's
// Retry) finds the create mark and never sends a second create.
func TestASceneWhoseCreateAnswerWasLostIsNeverCreatedAgain(t *testing.T) {
	r := newSceneRig(t, 1, "processing")
	r.provider.createStatus = http.StatusInternalServerError
	for attempt := 1; attempt <= 2; attempt++ {
		err := r.submit(1, "tok-1")
		var failed *longform.SceneFailedError
		if !errors.As(err, &failed) || !strings.Contains(failed.Msg, "answer to the job was lost") {
			t.Fatalf("delivery %d: err = %v, want the scene failed for the lost answer", attempt, err)
		}
		if r.provider.creates != 1 {
			t.Fatalf("delivery %d: %d creates upstream, want 1", attempt, r.provider.creates)
		}
		if st := r.scene(t, 1); !st.Submitting || st.ID != "" {
			t.Errorf("delivery %d: scene state %+v, want the create mark kept", attempt, st)
		}
		if n, _ := r.store.SlotsInUse(context.Background(), "scripted"); n != 0 {
			t.Errorf("delivery %d: %d slots in use, want the scene's freed", attempt, n)
		}
	}
	if len(r.queue.sent) != 0 {
		t.Errorf("polls enqueued %+v, want none", r.queue.sent)
	}
}

// The one poller takes both kinds of work from one queue: a scene's poll
// names its kind, and a scene's poll enqueued before kinds existed (a
// video_id and no kind, in flight during a deploy) is still a scene's.
// Both complete their scene through the job engine and resume its task.
func TestThePollerCompletesScenesByKindAndLegacyMessages(t *testing.T) {
	ctx := context.Background()
	r := newSceneRig(t, 0, "processing", "succeeded")
	poller := generation.NewPoller(generation.PollerPorts{Store: r.store, Upstreams: r.steps.Upstream, Queue: r.queue, Scenes: r.steps},
		generation.Settings{Log: slog.New(slog.DiscardHandler)})
	for n := 1; n <= 2; n++ {
		if err := r.submit(n, fmt.Sprintf("tok-%d", n)); err != nil {
			t.Fatal(err)
		}
	}
	if r.queue.sent[0].Kind != job.KindScene || r.queue.sent[1].Kind != job.KindScene {
		t.Fatalf("scene polls %+v, want each of kind %q", r.queue.sent, job.KindScene)
	}
	// Scene 2's chain goes on as a legacy message: no kind.
	legacy := func(m longform.ScenePoll) string {
		return fmt.Sprintf(`{"video_id":%q,"scene_number":%d,"task_token":%q,"attempt":%d}`, m.VideoID, m.SceneNumber, m.TaskToken, m.Attempt)
	}
	next := map[int]string{}
	for i := 0; i < 10 && len(r.tokens.successes) < 2; i++ {
		r.queue.mu.Lock()
		for _, m := range r.queue.sent {
			body, _ := json.Marshal(m)
			if m.SceneNumber == 2 {
				body = []byte(legacy(m))
			}
			next[m.SceneNumber] = string(body)
		}
		r.queue.sent = nil
		r.queue.mu.Unlock()
		var batch []domain.QueueMessage
		for n, body := range next {
			batch = append(batch, domain.QueueMessage{ID: fmt.Sprint(n), Body: body})
		}
		clear(next)
		if retry := poller.HandleBatch(ctx, batch); len(retry) != 0 {
			t.Fatalf("messages %v to deliver again", retry)
		}
	}
	if len(r.tokens.successes) != 2 {
		t.Fatalf("tasks resumed %v, want both scenes'", r.tokens.successes)
	}
	for n := 1; n <= 2; n++ {
		if st := r.scene(t, n); st.Status != domain.StatusCompleted {
			t.Errorf("scene %d: %+v, want completed", n, st)
		}
	}
	for _, tc := range []struct{ body, kind string }{
		{`{"kind":"scene","video_id":"v","scene_number":1,"task_token":"t"}`, job.KindScene},
		{`{"video_id":"v","scene_number":1,"task_token":"t"}`, job.KindScene},
		{`{"kind":"generation","generation_id":"g"}`, job.KindGeneration},
		{`{"generation_id":"g","attempt":1}`, job.KindGeneration},
	} {
		if got, err := job.KindOf([]byte(tc.body)); err != nil || got != tc.kind {
			t.Errorf("KindOf(%s) = %q, %v; want %q", tc.body, got, err, tc.kind)
		}
	}
}

// A scene is a child job run by the same engine as a generation: both wait
// in the same line at an upstream's cap, whichever holds the last slot.
func TestGenerationsAndScenesShareTheUpstreamsCap(t *testing.T) {
	ctx := context.Background()
	const generate = `{"model":"provider-b","model_version":"beta-2","input":{"prompt":"a lighthouse","aspect_ratio":"landscape","seconds":"4"}}`
	creator := func(r *sceneRig) *generation.Creator {
		return generation.NewCreator(r.store, r.steps.Upstream, r.queue, r.store, nil, pricing.Default(),
			generation.Settings{Log: slog.New(slog.DiscardHandler)})
	}
	t.Run("a generation holds the last slot: the scene waits", func(t *testing.T) {
		r := newSceneRig(t, 1, "processing")
		g, err := creator(r).Create(ctx, r.video.UserID, []byte(generate))
		if err != nil || g.UpstreamID == "" {
			t.Fatalf("generation: %+v, %v; want it submitted", g, err)
		}
		var full *longform.SlotsFullError
		if err := r.submit(1, "tok-1"); !errors.As(err, &full) {
			t.Fatalf("scene: err = %v, want SlotsFullError", err)
		}
		if n, err := r.store.SlotQueuePosition(ctx, "scripted", r.video.ID+"#scene-1"); err != nil || n != 1 {
			t.Errorf("scene's place in line = %d (%v), want 1", n, err)
		}
		if r.provider.creates != 1 {
			t.Errorf("%d creates upstream, want the generation's alone", r.provider.creates)
		}
	})
	t.Run("a scene holds the last slot: the generation waits", func(t *testing.T) {
		r := newSceneRig(t, 1, "processing")
		if err := r.submit(1, "tok-1"); err != nil {
			t.Fatal(err)
		}
		g, err := creator(r).Create(ctx, r.video.UserID, []byte(generate))
		if err != nil || g.UpstreamID != "" {
			t.Fatalf("generation: %+v, %v; want it waiting", g, err)
		}
		if n, err := r.store.SlotQueuePosition(ctx, "scripted", g.UUID); err != nil || n != 1 {
			t.Errorf("generation's place in line = %d (%v), want 1", n, err)
		}
		if r.provider.creates != 1 {
			t.Errorf("%d creates upstream, want the scene's alone", r.provider.creates)
		}
	})
}

// TestARegenerateMakesItsSceneAgainUnderItsOwnKey: the Scene task of a
// regenerate makes the scene with the regenerate's prompt through the same
// engine, records its job on the regenerate (the video's own scene states
// stay the first render's) and keeps the clip under the revision's key, so
// the clip of the video served is untouched; once the regenerate no longer
// runs, its task stops without a job.
func TestARegenerateMakesItsSceneAgainUnderItsOwnKey(t *testing.T) {
	ctx := context.Background()
	r := newSceneRig(t, 0, "processing", "succeeded")
	first := domain.SceneState{Status: domain.StatusCompleted, Upstream: "scripted", UpstreamJob: domain.UpstreamJob{ID: "job0"}}
	for n := 1; n <= 2; n++ {
		if err := r.store.SetSceneStatus(ctx, r.video.ID, n, first, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	done := domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{"https://cdn.example/r1.mp4"}, TotalDuration: 10}
	if err := r.store.FinishLongVideo(ctx, r.video.ID, done, time.Now()); err != nil {
		t.Fatal(err)
	}
	regen := domain.Regeneration{SceneNumber: 2, Revision: 2, Prompt: "gulls at dusk", Model: "beta-2", CreditsHeld: decimal.NewFromInt(65), StartedAt: time.Now()}
	if err := r.store.BeginRegenerate(ctx, r.video.ID, regen, time.Now()); err != nil {
		t.Fatal(err)
	}
	task := longform.SceneTask{VideoID: r.video.ID, SceneNumber: 2, TaskToken: "tok-r2", Revision: 2}
	if _, err := r.steps.SubmitScene(ctx, task); err != nil {
		t.Fatal(err)
	}
	if r.provider.creates != 1 || !strings.Contains(r.provider.bodies[0], "gulls at dusk") {
		t.Fatalf("%d creates %v, want one asking for the regenerate's prompt", r.provider.creates, r.provider.bodies)
	}
	if m := r.queue.last(t); m.Revision != 2 || m.SceneNumber != 2 {
		t.Errorf("the poll enqueued is %+v, want scene 2 of revision 2", m)
	}
	r.pollUntilResumed(t)
	if len(r.tokens.successes) != 1 || !strings.Contains(r.tokens.lastOutput, `"key":"long-videos/`+r.video.ID+`/scenes/002-r2.mp4"`) {
		t.Fatalf("successes %v output %s, want the revision's clip key once", r.tokens.successes, r.tokens.lastOutput)
	}
	v, err := r.store.GetLongVideo(ctx, r.video.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Regenerating == nil || v.Regenerating.State.ID != "job1" || v.Regenerating.State.Status != domain.StatusCompleted {
		t.Errorf("the regenerate's scene = %+v, want job1 completed", v.Regenerating)
	}
	if v.SceneStatus[2] != first || v.Status != domain.StatusCompleted || v.FinalVideoURL != done.OutputURLs[0] {
		t.Errorf("the video is %s with %s and scene 2 %+v; want it completed as it was, scene 2 the first render's", v.Status, v.FinalVideoURL, v.SceneStatus[2])
	}

	// Ended (canceled): a retried task stops without a job.
	if err := r.store.EndRegenerate(ctx, r.video.ID, 2, domain.Outcome{Status: domain.StatusCanceled}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var failed *longform.SceneFailedError
	if _, err := r.steps.SubmitScene(ctx, task); !errors.As(err, &failed) || r.provider.creates != 1 {
		t.Errorf("the task of an ended regenerate = %v after %d creates; want a SceneFailedError and no new job", err, r.provider.creates)
	}
}
