package statemachines_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/deploy"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
	"github.com/mediagen-dev/mediagen/statemachines"
)

// A Finalize that hangs is timed out by its state (25 s) before Lambda
// would stop its function (template.yaml: 30 s), and the state's Retry
// runs it again while the first invocation still runs, as on AWS; the
// video completes with the retry's result, the first one's discarded. The
// real definition, each task under its template Timeout, on a clock the
// test moves.
func TestAHungFinalizeIsRetriedBesideItselfAndItsLateResultDiscarded(t *testing.T) {
	tpl, err := deploy.Load("../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := &toldClock{ManualClock: stepfunctions.NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
		set: make(chan time.Duration, 64)}
	var (
		m          *stepfunctions.Machine
		mu         sync.Mutex
		finalizes  int
		firstCtx   context.Context
		firstEnded error // the first Finalize's context when the retry started
	)
	finalizeStarted := make(chan int, 2)
	release := make(chan struct{})
	handlers := map[string]stepfunctions.TaskFunc{
		"SubmitSceneFunctionArn": func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			var p struct {
				SceneNumber int    `json:"scene_number"`
				Token       string `json:"task_token"`
			}
			json.Unmarshal(in, &p)
			clip, _ := json.Marshal(map[string]any{"scene_number": p.SceneNumber, "key": "clip"})
			return json.RawMessage(`{}`), m.SendTaskSuccess(ctx, p.Token, clip)
		},
		"NarrateFunctionArn": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"tracks":[]}`), nil
		},
		"AssembleFunctionArn": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"video_id":"v1","key":"final.mp4","duration":5}`), nil
		},
		"FinalizeFunctionArn": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			finalizes++
			n := finalizes
			if n == 1 {
				firstCtx = ctx
			} else {
				firstEnded = firstCtx.Err()
			}
			mu.Unlock()
			finalizeStarted <- n
			if n == 1 {
				select { // a hung call: it ends when let go, or when Lambda stops it
				case <-release:
				case <-ctx.Done():
				}
				return json.RawMessage(`{"video_id":"v1","status":"late"}`), nil
			}
			return json.RawMessage(`{"video_id":"v1","status":"completed"}`), nil
		},
		"MarkFailedFunctionArn": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"video_id":"v1","status":"failed","error":"marked failed"}`), nil
		},
	}
	subs, resources, timeouts := map[string]string{}, map[string]stepfunctions.TaskFunc{}, map[string]time.Duration{}
	for _, name := range statemachines.LongStoryTasks {
		fn := strings.TrimSuffix(name, "Arn")
		arn := "arn:aws:lambda:local:000000000000:function:" + fn
		subs[name], resources[arn] = arn, handlers[name]
		if timeouts[arn], err = tpl.FunctionTimeout(fn); err != nil {
			t.Fatal(err)
		}
	}
	m, err = stepfunctions.Load("long-story", statemachines.LongStory, stepfunctions.Config{
		Substitutions: subs, Resources: resources, FunctionTimeouts: timeouts, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	e, err := m.Start(context.Background(), "v1", json.RawMessage(`{"video_id":"v1","scene_numbers":[1,2]}`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string) int {
		t.Helper()
		select {
		case n := <-finalizeStarted:
			return n
		case <-e.Done():
			out, err := e.Wait()
			t.Fatalf("the execution ended (%s, %v) before %s", out, err, what)
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s", what)
		}
		return 0
	}
	waitFor("first Finalize")
	clock.Advance(25 * time.Second) // Finalize's TimeoutSeconds
	clock.waitSet(t, 2*time.Second) // its Retry's first interval
	clock.Advance(2 * time.Second)
	if n := waitFor("retried Finalize"); n != 2 {
		t.Fatalf("Finalize call %d, want the retry", n)
	}
	close(release)
	out, err := e.Wait()
	if err != nil || !strings.Contains(string(out), `"status":"completed"`) {
		t.Errorf("execution %s: %s, %v; want the retry's completed result, not the late one", e.Status(), out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if finalizes != 2 || firstEnded != nil {
		t.Errorf("%d Finalize calls; the first's context had ended (%v) when the retry started: want it still running beside the retry", finalizes, firstEnded)
	}
}

// toldClock tells the test each timer the workflow sets.
type toldClock struct {
	*stepfunctions.ManualClock
	set chan time.Duration
}

func (c *toldClock) AfterFunc(d time.Duration, f func()) func() bool {
	stop := c.ManualClock.AfterFunc(d, f)
	select {
	case c.set <- d:
	default: // nobody waits for this one
	}
	return stop
}

// waitSet waits for the workflow to set a timer of d.
func (c *toldClock) waitSet(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-c.set:
			if got == d {
				return
			}
		case <-deadline:
			t.Fatalf("the workflow set no %s timer", d)
		}
	}
}
