package longform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
	"github.com/mediagen-dev/mediagen/internal/local/workflowtokens"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
	"github.com/mediagen-dev/mediagen/statemachines"
)

// slowProvider renders every job in latency of the fake clock.
type slowProvider struct {
	srv     *httptest.Server
	clock   *stepfunctions.ManualClock
	latency time.Duration
	clip    []byte
	mu      sync.Mutex
	started map[string]time.Time
}

func (p *slowProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/files/"):
		w.Write(p.clip)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		w.Write([]byte(`{"latest_version":{"openapi_schema":{"components":{"schemas":{"Input":{"properties":` +
			`{"prompt":{"type":"string"},"seconds":{"type":"integer"}}}}}}}}`))
	case r.Method == http.MethodPost:
		id := fmt.Sprintf("job%d", len(p.started)+1)
		p.started[id] = p.clock.Now()
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q,"status":"starting"}`, id)
	default:
		id := strings.TrimPrefix(r.URL.Path, "/v1/predictions/")
		if p.clock.Now().Sub(p.started[id]) < p.latency {
			fmt.Fprintf(w, `{"id":%q,"status":"processing"}`, id)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"status":"succeeded","output":"%s/files/%s.mp4"}`, id, p.srv.URL, id)
	}
}

// clockQueue delivers messages in the order they become visible on the
// fake clock, to the poller's handler, as SQS and the poller would.
type clockQueue struct {
	mu    sync.Mutex
	clock *stepfunctions.ManualClock
	msgs  []clockMsg
	sent  chan struct{} // a message was sent (buffered: one is enough)
}

type clockMsg struct {
	at   time.Time
	body string
}

func (q *clockQueue) Send(_ context.Context, body []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, clockMsg{at: q.clock.Now().Add(delay), body: string(body)})
	select {
	case q.sent <- struct{}{}:
	default:
	}
	return nil
}

func (q *clockQueue) take() (clockMsg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) == 0 {
		return clockMsg{}, false
	}
	sort.SliceStable(q.msgs, func(i, j int) bool { return q.msgs[i].at.Before(q.msgs[j].at) })
	m := q.msgs[0]
	q.msgs = q.msgs[1:]
	return m, true
}

// toneNarrator speaks every text as the same second of tone (the engines
// are tested on their own; this test is about the workflow's limits).
type toneNarrator struct{ wav []byte }

func (n toneNarrator) Speak(_ context.Context, _ longform.Language, _, dir string) (string, string, error) {
	f, err := os.CreateTemp(dir, "speech-*.wav")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	_, err = f.Write(n.wav)
	return f.Name(), "audio/wav", err
}

// TestTheLongestVideoFitsStepFunctionsLimits runs the real workflow file on
// the local runner, which enforces Step Functions' quotas, with the largest
// request the API accepts: 20 scenes, every prompt at its limit in a
// script of 3-byte characters, narration at its limit, and a provider that
// takes 40 minutes per clip. It completes, and its largest payload and its
// history stay far below 256 KiB and 25,000 events.
func TestTheLongestVideoFitsStepFunctionsLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ff := ffmpeg.Runner{}
	clipPath, wavPath := filepath.Join(dir, "clip.mp4"), filepath.Join(dir, "tone.wav")
	if err := ff.Run(ctx, "-f", "lavfi", "-i", "testsrc2=s=160x90:r=24:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clipPath); err != nil {
		t.Fatal(err)
	}
	if err := ff.Run(ctx, "-f", "lavfi", "-i", "sine=d=1", wavPath); err != nil {
		t.Fatal(err)
	}
	clip, _ := os.ReadFile(clipPath)
	wav, _ := os.ReadFile(wavPath)

	// The test's time, the provider's, the queue's and the workflow's
	// alike: it moves only when the queue delivers a delayed message, so 40
	// minutes of provider latency pass in moments, and the workflow's
	// timeouts and heartbeats count that time, not how long a loaded
	// machine takes over ffmpeg.
	clock := stepfunctions.NewManualClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	p := &slowProvider{clock: clock, latency: 40 * time.Minute, clip: clip, started: map[string]time.Time{}}
	p.srv = httptest.NewServer(p)
	defer p.srv.Close()
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	defer waitfor.Close(t, objects.Close)
	rc := routing.Single("slow", routing.ProtocolReplicate, p.srv.URL, []string{p.srv.Listener.Addr().String()})
	router, err := upstream.NewRouter(rc, func(*routing.Upstream) (string, error) { return "tok", nil }, nil, upstream.Tuning{})
	if err != nil {
		t.Fatal(err)
	}
	queue := &clockQueue{clock: clock, sent: make(chan struct{}, 1)}
	quiet := slog.New(slog.DiscardHandler)
	steps := &longform.Steps{Store: st, Upstream: router, Slots: st, Queue: queue, PollInterval: 4 * time.Second,
		Copier: &media.Copier{Bucket: objects.MediaBucket(), HTTP: p.srv.Client(), AllowedHosts: rc.OutputHosts(), MaxBytes: 1 << 20, AllowLoopback: true},
		Files:  objects.MediaBucket(), Narrations: objects.MediaBucket(), Narrator: toneNarrator{wav: wav}, FFmpeg: ff, WorkDir: dir, Log: quiet}
	handlers := map[string]any{"SubmitSceneFunctionArn": steps.SubmitScene, "NarrateFunctionArn": steps.Narrate,
		"AssembleFunctionArn": steps.Assemble, "FinalizeFunctionArn": steps.Finalize, "MarkFailedFunctionArn": steps.MarkFailed}
	// Time passes only while no step runs: the provider's 40 minutes are
	// the only slow thing, and a step that takes long on a loaded machine
	// does not use up the workflow's time. Each step holds running (read)
	// while it runs; the poller takes it (write) to move the clock.
	var running sync.RWMutex
	subs, resources := map[string]string{}, map[string]stepfunctions.TaskFunc{}
	for _, name := range statemachines.LongStoryTasks {
		arn := "arn:aws:lambda:local:000000000000:function:" + strings.TrimSuffix(name, "FunctionArn")
		step := stepfunctions.Handler(handlers[name])
		subs[name], resources[arn] = arn, func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			running.RLock()
			defer running.RUnlock()
			return step(ctx, in)
		}
	}
	ended := make(chan stepfunctions.ExecutionEnd, 1)
	// The workflow's timers (the heartbeat's 300 s, the execution's hour)
	// run on the test's clock, unscaled: the video fits them in provider
	// time.
	m, err := stepfunctions.Load("long-story", statemachines.LongStory, stepfunctions.Config{Substitutions: subs,
		Resources: resources, Clock: clock, Log: quiet, OnExecutionEnd: func(e stepfunctions.ExecutionEnd) { ended <- e }})
	if err != nil {
		t.Fatal(err)
	}
	wf := &stepfunctions.Workflow{Machine: m}
	steps.Tokens = workflowtokens.TaskTokens{Workflow: wf}

	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(100000)})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := longform.LookupLanguage("ja")
	threeBytes := func(n int) string { return strings.Repeat("あ", n) } // U+3042: 3 bytes in UTF-8
	req := map[string]any{"prompt": threeBytes(longform.MaxPromptRunes), "language_code": "ja", "model": "beta-2"}
	var scenes []map[string]any
	for n := 1; n <= longform.MaxScenes; n++ {
		scenes = append(scenes, map[string]any{"scene_number": n, "prompt": threeBytes(longform.MaxScenePrompt),
			"narration": threeBytes(ja.MaxNarration())})
	}
	req["scenes"] = scenes
	body, _ := json.Marshal(req)
	svc := longform.NewCreator(st, wf, pricing.Default(), longform.Settings{Log: quiet})
	created, err := svc.Create(ctx, acct.UserID, body)
	if err != nil {
		t.Fatalf("the largest valid request was refused: %v", err)
	}
	t.Logf("request: %d bytes; provider latency: 40 minutes per clip (fake clock)", len(body))

	// The poller, beside the workflow. The deadline only stops a hung
	// test; nothing in the workflow depends on real time.
	var end stepfunctions.ExecutionEnd
	deadline := time.After(5 * time.Minute)
	polls := 0
poll:
	for {
		msg, ok := queue.take()
		if !ok {
			select {
			case end = <-ended:
				break poll
			case <-deadline:
				t.Fatalf("the video did not finish; %d polls delivered", polls)
			case <-queue.sent:
			}
			continue
		}
		running.Lock()
		clock.AdvanceTo(msg.at)
		polls++
		err := steps.HandleScenePoll(ctx, []byte(msg.body))
		running.Unlock()
		if err != nil {
			t.Logf("poll to deliver again: %v", err)
			queue.Send(ctx, []byte(msg.body), time.Second)
		}
	}
	t.Logf("execution %s: max_payload_bytes %d (limit %d), history_events %d (limit %d), %d polls over %s of provider time",
		end.Status, end.MaxPayloadBytes, stepfunctions.MaxPayloadBytes, end.HistoryEvents, stepfunctions.MaxHistoryEvents,
		polls, clock.Now().Sub(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)))
	v, err := st.GetLongVideo(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != "SUCCEEDED" || v.Status != domain.StatusCompleted {
		t.Fatalf("execution %s (%s: %s), video %s: %s", end.Status, end.Error, end.Cause, v.Status, v.Error)
	}
	if want := float64(longform.MaxScenes * longform.SceneSeconds); v.TotalDuration < want-0.1 || v.TotalDuration > want+0.1 {
		t.Errorf("total_duration %.3f, want %.0f", v.TotalDuration, want)
	}
	// Far below, not just below: ids, not prompts, cross between states.
	if end.MaxPayloadBytes > stepfunctions.MaxPayloadBytes/10 || end.HistoryEvents > stepfunctions.MaxHistoryEvents/10 {
		t.Errorf("max payload %d bytes, %d history events: the design should stay under a tenth of each limit", end.MaxPayloadBytes, end.HistoryEvents)
	}
}
