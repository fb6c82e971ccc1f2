package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
	"github.com/mediagen-dev/mediagen/internal/local/workflowtokens"
	"github.com/mediagen-dev/mediagen/internal/testkit/faults"
	"github.com/mediagen-dev/mediagen/statemachines"
)

// wavNarrator speaks every text as the same short tone.
type wavNarrator struct{ wav string }

func (n wavNarrator) Speak(_ context.Context, _ longform.Language, _, dir string) (string, string, error) {
	raw, err := os.ReadFile(n.wav)
	if err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(dir, "speech-*.wav")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	_, err = f.Write(raw)
	return f.Name(), "audio/wav", err
}

// scratch is a work dir whose path has no '#' (subtest names have one, and
// ffmpeg reads a '#' in a file name as the start of a URL fragment).
func scratch(t *testing.T) string {
	dir, err := os.MkdirTemp("", "faults-story-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// executions starts workflows on the real state machine and remembers them,
// so the test can wait for them to end.
type executions struct {
	m    *stepfunctions.Machine
	mu   sync.Mutex
	runs []*stepfunctions.Execution
}

func (e *executions) Start(ctx context.Context, name string, input []byte) error {
	x, err := e.m.Start(context.WithoutCancel(ctx), name, input)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.runs = append(e.runs, x)
	e.mu.Unlock()
	return nil
}

// Stop is not used by these paths (no cancel): it stops nothing.
func (e *executions) Stop(context.Context, string, string) error { return nil }

func (e *executions) wait() []string {
	e.mu.Lock()
	runs := append([]*stepfunctions.Execution(nil), e.runs...)
	e.mu.Unlock()
	var ends []string
	for _, x := range runs {
		_, err := x.Wait()
		ends = append(ends, fmt.Sprintf("%s %v", x.Status(), err))
	}
	return ends
}

// storyWorld adds the long-form service and the workflow to a world: the
// real statemachines file run by the local ASL runner, each task bound to
// the step its Lambda function runs, every adapter wrapped.
func newStoryWorld(t *testing.T, sh *shared, wav string) (*world, *longform.Creator, *executions) {
	w := newWorld(t, sh, openSQLite(t))
	bucket := &faults.Bucket{Inner: sh.bucket, In: w.in}
	steps := &longform.Steps{
		Store:      w.st,
		Upstream:   sh.router(t, w.in),
		Copier:     &media.Copier{Bucket: bucket, HTTP: sh.provider.srv.Client(), AllowedHosts: []string{sh.host}, MaxBytes: 1 << 20, AllowLoopback: true},
		Files:      bucket,
		Narrations: bucket,
		Deleter:    bucket,
		Narrator:   wavNarrator{wav: wav},
		FFmpeg:     ffmpeg.Runner{},
		Queue:      &faults.Queue{Inner: w.q, In: w.in},
		WorkDir:    scratch(t),
		Now:        w.now,
		Log:        quiet(),
	}
	// The poller takes the scenes' polls from the same queue, as in AWS.
	w.svc.Scenes = steps
	handlers := map[string]any{
		"SubmitSceneFunctionArn": steps.SubmitScene,
		"NarrateFunctionArn":     steps.Narrate, "AssembleFunctionArn": steps.Assemble,
		"FinalizeFunctionArn": steps.Finalize, "MarkFailedFunctionArn": steps.MarkFailed,
	}
	subs, resources := map[string]string{}, map[string]stepfunctions.TaskFunc{}
	for _, name := range statemachines.LongStoryTasks {
		arn := "arn:aws:lambda:local:000000000000:function:" + strings.TrimSuffix(name, "FunctionArn")
		subs[name], resources[arn] = arn, stepfunctions.Handler(handlers[name])
	}
	m, err := stepfunctions.Load("long-story", statemachines.LongStory, stepfunctions.Config{
		Substitutions: subs, Resources: resources, WaitScale: 0.05, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	steps.Tokens = workflowtokens.TaskTokens{Workflow: &stepfunctions.Workflow{Machine: m}}
	ex := &executions{m: m}
	svc := longform.NewCreator(w.st, &faults.Workflow{Inner: ex, In: w.in}, pricing.Default(),
		longform.Settings{Now: w.now, Log: quiet()})
	return w, svc, ex
}

const storyRequest = `{"prompt":"A day at the sea","language_code":"en","model":"beta-2","scenes":[
	{"scene_number":1,"prompt":"Waves at sunrise"}]}`

// createOps are the calls of the create handler; the rest are the
// workflow's. Both run in one phase: the workflow starts inside the create
// handler, so a phase switch after it would race with the first step.
var createOps = map[string]bool{"store.Hold": true, "store.CreateLongVideo": true, "workflow.Start": true}

func runStory(w *world, svc *longform.Creator, ex *executions) {
	w.in.Phase("story")
	ended := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		// The poller runs beside the workflow: the scenes wait on it.
		defer close(polled)
		w.drainUntil(ended)
	}()
	faults.Run(func() error { _, err := svc.Create(context.Background(), w.user, []byte(storyRequest)); return err })
	w.ends = ex.wait()
	close(ended)
	<-polled
	w.in.Phase("sweep")
	w.advanceTo(w.now().Add(longform.Deadline))
	w.sweep()
}

func (w *world) videoRecord(id string) (domain.Status, decimal.Decimal, []string, bool) {
	v, err := w.inner.GetLongVideo(context.Background(), id)
	if errors.Is(err, domain.ErrNotFound) {
		return "", decimal.Zero, nil, false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	var urls []string
	if v.FinalVideoURL != "" {
		urls = []string{v.FinalVideoURL}
	}
	return v.Status, v.CreditsHeld, urls, true
}

// TestLongVideoSurvivesAFaultAtEveryCall fails or crashes, one at a time,
// every call of the long-form create handler and of each workflow step.
// Failures are retried by the workflow and the video completes; a crashed
// step is caught and the video fails with its credits released; a create
// that dies is cleaned up by the sweeper.
func TestLongVideoSurvivesAFaultAtEveryCall(t *testing.T) {
	sh := newShared(t)
	wav := filepath.Join(t.TempDir(), "tone.wav")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
		"-y", wav).CombinedOutput(); err != nil {
		t.Fatalf("make a tone: %v %s", err, out)
	}
	dry, svc, ex := newStoryWorld(t, sh, wav)
	runStory(dry, svc, ex)
	if st := dry.check(dry.videoRecord); len(st) != 1 || st[dry.in.Held()[0]] != domain.StatusCompleted {
		t.Fatalf("without faults the video ended %v, want completed", st)
	}
	points, modes := faults.Points(dry.in.Trace(), "story"), faults.Modes
	if os.Getenv("MEDIAGEN_FAULTS") != "full" {
		// Each step runs ffmpeg, so make test tries each operation once in
		// the two modes that take different paths (a failure is retried, a
		// crash is caught); make faults tries every call in every mode.
		points, modes = faults.FirstOfEachOp(points), []faults.Mode{faults.FailBefore, faults.CrashAfter}
	}
	t.Logf("%d points on the create and workflow paths, each in %d modes", len(points), len(modes))
	for _, p := range points {
		for _, mode := range modes {
			t.Run(p.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				w, svc, ex := newStoryWorld(t, sh, wav)
				w.in.Arm(p, mode)
				runStory(w, svc, ex)
				if len(w.in.Fired()) != 1 {
					t.Fatalf("the fault at %s never fired", p)
				}
				st := w.check(w.videoRecord)
				if !createOps[p.Op] && (mode == faults.FailBefore || mode == faults.FailAfter) {
					for id, s := range st {
						if s != domain.StatusCompleted {
							v, _ := w.inner.GetLongVideo(context.Background(), id)
							t.Errorf("after a %s at %s (retried by the workflow), %s ended %s: %s; executions: %v; updated %v now %v", mode, p, id, s, v.Error, w.ends, v.UpdatedAt, w.now())
						}
					}
				}
			})
		}
	}
}
