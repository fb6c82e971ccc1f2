package faults_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/testkit/faults"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

func makeClip(path string) error {
	out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=blue:s=64x36:r=24:d=1",
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-y", path).CombinedOutput()
	if err != nil {
		return &exec.ExitError{Stderr: out}
	}
	return nil
}

// Two generations: two images of one request, and a video.
var generateBodies = []string{
	`{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a cat"},"image_count":2}`,
	`{"model":"provider-b","model_version":"beta-2","input":{"prompt":"a boat","seconds":"4","aspect_ratio":"landscape"}}`,
}

// runGenerations is the whole single-generation life as production runs
// it: the generate handler, the poller fed by the queue, then the sweeper
// after the deadlines and the hold grace, then the queue again.
func runGenerations(w *world, before func()) {
	ctx := context.Background()
	if before != nil {
		before()
	}
	w.in.Phase("create")
	for _, body := range generateBodies {
		faults.Run(func() error {
			_, err := generation.NewCreator(w.svc.Store, w.svc.Upstreams, w.svc.Queue, w.svc.Slots, w.svc.Inputs, w.svc.Prices, w.svc.Settings).Create(ctx, w.user, []byte(body))
			return err
		})
	}
	w.in.Phase("poll")
	w.drain()
	w.in.Phase("sweep")
	w.sweep()
	w.in.Phase("after")
	w.drain()
}

// TestGenerationSurvivesAFaultAtEveryCall fails or crashes, one at a time,
// every call the generate handler and the poller make to the store, the
// queue, the provider and the bucket, recovers as production does, and
// checks that money and records come out right.
func TestGenerationSurvivesAFaultAtEveryCall(t *testing.T) {
	sh := newShared(t)
	generationFaults(t, sh, openSQLite)
}

func generationFaults(t *testing.T, sh *shared, open func(*testing.T) store.Store) {
	dry := newWorld(t, sh, open(t))
	runGenerations(dry, nil)
	if st := dry.check(dry.generationRecord); len(st) != 2 || st[dry.in.Held()[0]] != domain.StatusCompleted {
		t.Fatalf("without faults the generations ended %v, want both completed", st)
	}
	points := faults.Points(dry.in.Trace(), "create", "poll")
	first := map[faults.Point]bool{}
	for _, p := range faults.FirstOfEachOp(points) {
		first[p] = true
	}
	full := os.Getenv("MEDIAGEN_FAULTS") == "full"
	t.Logf("%d calls on the generate and poll paths", len(points))
	for _, p := range points {
		for _, mode := range faults.Modes {
			// make test crashes every call, and fails the first call of
			// each operation; make faults fails every call too.
			if !full && !first[p] && (mode == faults.FailBefore || mode == faults.FailAfter) {
				continue
			}
			t.Run(p.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel() // each world has its own store and clock
				w := newWorld(t, sh, open(t))
				w.in.Arm(p, mode)
				runGenerations(w, nil)
				if len(w.in.Fired()) != 1 {
					t.Fatalf("the fault at %s never fired", p)
				}
				statuses := w.check(w.generationRecord)
				w.checkChain()
				// The provider finished both jobs: a fault in the poller
				// must not lose them.
				if p.Phase == "poll" {
					for id, s := range statuses {
						if s != domain.StatusCompleted {
							t.Errorf("after a %s at %s, %s ended %s, want completed", mode, p, id, s)
						}
					}
				}
			})
		}
	}
}

// TestSweeperSurvivesAFaultAtEveryCall leaves work for the sweeper (the
// generate handler dies before it enqueues the first poll, or before it
// records the generation) and then fails or crashes each of the sweeper's
// own calls in turn; its next run finishes the job.
func TestSweeperSurvivesAFaultAtEveryCall(t *testing.T) {
	sh := newShared(t)
	leave := func(w *world) func() {
		return func() {
			w.in.Arm(faults.Point{Phase: "create", Op: "queue.Send", Nth: 1}, faults.CrashBefore)
			w.in.Arm(faults.Point{Phase: "create", Op: "store.CreateGeneration", Nth: 2}, faults.CrashBefore)
		}
	}
	dry := newWorld(t, sh, openSQLite(t))
	runGenerations(dry, leave(dry))
	if st := dry.check(dry.generationRecord); len(st) != 2 {
		t.Fatalf("statuses %v", st)
	}
	points := faults.Points(dry.in.Trace(), "sweep")
	if len(points) < 4 {
		t.Fatalf("the sweeper made only %d calls: %v", len(points), points)
	}
	for _, p := range points {
		for _, mode := range faults.Modes {
			t.Run(p.String()+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, sh, openSQLite(t))
				runGenerations(w, func() { leave(w)(); w.in.Arm(p, mode) })
				if len(w.in.Fired()) != 3 {
					t.Fatalf("fired %v, want the two set-up faults and %s", w.in.Fired(), p)
				}
				statuses := w.check(w.generationRecord)
				for id, s := range statuses {
					if s != domain.StatusFailed && s != "missing" {
						t.Errorf("%s ended %s; with its poll lost it must time out", id, s)
					}
				}
			})
		}
	}
}

// TestGenerationSurvivesFaultsOnDynamoDB runs the same life on the DynamoDB
// adapter (against moto's server): each operation once, in the modes where the
// write landed but its caller never heard (crash-after, fail-after), where
// conditional writes must make the retry harmless.
func TestGenerationSurvivesFaultsOnDynamoDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		t.Fatalf("moto's server: %v", err)
	}
	t.Cleanup(server.Stop)
	// One set of tables: each world has its own account, and every world
	// ends with its holds settled, so the next world's sweeper finds none.
	st, err := server.NewStore(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	sh := newShared(t)
	dry := newWorld(t, sh, st)
	runGenerations(dry, nil)
	dry.check(dry.generationRecord)
	for _, p := range faults.FirstOfEachOp(faults.Points(dry.in.Trace(), "create", "poll")) {
		for _, mode := range []faults.Mode{faults.CrashAfter, faults.FailAfter} {
			t.Run(p.String()+"/"+mode.String(), func(t *testing.T) {
				w := newWorld(t, sh, st)
				w.in.Arm(p, mode)
				runGenerations(w, nil)
				w.check(w.generationRecord)
				w.checkChain()
			})
		}
	}
}
