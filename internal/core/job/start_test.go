package job_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/job"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// provider answers every create with err (a job when nil) and records
// what it was asked.
type provider struct {
	upstream.Provider
	err      error
	creates  int
	canceled []string
}

func (p *provider) Submit(context.Context, string, map[string]any, string) (domain.UpstreamJob, error) {
	p.creates++
	if p.err != nil {
		return domain.UpstreamJob{}, p.err
	}
	return domain.UpstreamJob{ID: fmt.Sprintf("job%d", p.creates)}, nil
}

func (p *provider) Cancel(_ context.Context, j domain.UpstreamJob) error {
	p.canceled = append(p.canceled, j.ID)
	return nil
}

// upstreams are providers by name, each capped at one job.
type upstreams map[string]*provider

func (u upstreams) Provider(name string) (upstream.Provider, error) {
	if p, ok := u[name]; ok {
		return p, nil
	}
	return nil, errors.New("no upstream " + name)
}

func (u upstreams) Limit(string) int { return 1 }

// slots holds each upstream's slot and line: the first holder runs, the
// others wait in order.
type slots map[string][]string

func (s slots) AcquireSlot(_ context.Context, name, holder string, limit int, _ time.Time) (bool, error) {
	i := slices.Index(s[name], holder)
	if i < 0 {
		s[name], i = append(s[name], holder), len(s[name])
	}
	return i < limit, nil
}

func (s slots) ReleaseSlot(_ context.Context, name, holder string) error {
	s[name] = slices.DeleteFunc(s[name], func(h string) bool { return h == holder })
	return nil
}

// owner records what the engine asked it to.
type owner struct {
	marks   []string
	unsent  int
	run     domain.UpstreamRun
	failRec error
}

func (o *owner) Holder() string { return "work-1" }
func (o *owner) Hook() string   { return "" }
func (o *owner) Sending(_ context.Context, name string) error {
	o.marks = append(o.marks, name)
	return nil
}
func (o *owner) Unsent(context.Context) { o.unsent++ }
func (o *owner) Record(_ context.Context, run domain.UpstreamRun) error {
	if o.failRec != nil {
		return o.failRec
	}
	o.run = run
	return nil
}

func TestStartTakesTheFirstRouteWithRoomAndNeverCreatesTwice(t *testing.T) {
	notStarted := fmt.Errorf("%w: connection refused", upstream.ErrNotStarted)
	lost := &upstream.UnknownOutcomeError{Cause: errors.New("connection reset")}
	refused := &upstream.Error{Op: "create", StatusCode: 422, Message: "prompt too long"}
	tests := []struct {
		name string
		// busy names the upstreams whose one slot another holder has.
		busy      []string
		errA      error
		recordErr error
		// want: the run's upstream, or the line waited in, or a failure.
		wantRun, wantWait string
		wantFailure       func(*job.Failure) bool
		wantCreates       [2]int // at a, at b
		wantUnsent        int
		// wantHeld lists the upstreams where work-1 holds a slot or place.
		wantHeld []string
	}{
		{name: "a has room", wantRun: "a", wantCreates: [2]int{1, 0}, wantHeld: []string{"a"}},
		{name: "a full, b has room: b, leaving a's line", busy: []string{"a"}, wantRun: "b", wantCreates: [2]int{0, 1}, wantHeld: []string{"b"}},
		{name: "both full: waits in a's line only", busy: []string{"a", "b"}, wantWait: "a", wantHeld: []string{"a"}},
		{name: "a started nothing: fails over to b", errA: notStarted, wantRun: "b", wantCreates: [2]int{1, 1}, wantUnsent: 1, wantHeld: []string{"b"}},
		{name: "a's answer lost: no other create, the mark kept", errA: lost, wantCreates: [2]int{1, 0}, wantHeld: []string{"a"},
			wantFailure: func(f *job.Failure) bool { return f.Unknown && f.Held && f.Upstream == "a" }},
		{name: "a refused the input: not tried elsewhere", errA: refused, wantCreates: [2]int{1, 0}, wantUnsent: 1, wantHeld: []string{"a"},
			wantFailure: func(f *job.Failure) bool {
				return f.Refused && f.Held && f.Reason == "upstream a refused the job: prompt too long"
			}},
		{name: "the job could not be recorded: it is canceled", recordErr: errors.New("store down"), wantCreates: [2]int{1, 0}, wantHeld: []string{"a"},
			wantFailure: func(f *job.Failure) bool { return f.Recording && f.Held && f.Upstream == "a" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ups := upstreams{"a": {err: tt.errA}, "b": {}}
			lines := slots{}
			for _, name := range tt.busy {
				lines[name] = []string{"other"}
			}
			e := &job.Engine{Upstreams: ups, Slots: lines}
			o := &owner{failRec: tt.recordErr}
			plans := []routing.Plan{{Route: routing.Route{Upstream: "a", Model: "m/a"}, Jobs: 1}, {Route: routing.Route{Upstream: "b", Model: "m/b"}, Jobs: 1}}
			st, err := e.Start(context.Background(), slog.New(slog.DiscardHandler), o, plans)
			var f *job.Failure
			switch {
			case tt.wantFailure != nil:
				if !errors.As(err, &f) || !tt.wantFailure(f) {
					t.Fatalf("err = %#v, want the failure described", err)
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			case st.WaitingAt != tt.wantWait || st.Run.Upstream != tt.wantRun:
				t.Fatalf("started %+v, want run at %q, waiting at %q", st, tt.wantRun, tt.wantWait)
			case tt.wantRun != "" && (o.run.Upstream != tt.wantRun || len(o.run.Jobs) != 1):
				t.Errorf("recorded %+v, want one job at %s", o.run, tt.wantRun)
			}
			if got := [2]int{ups["a"].creates, ups["b"].creates}; got != tt.wantCreates {
				t.Errorf("creates at a, b = %v, want %v", got, tt.wantCreates)
			}
			if o.unsent != tt.wantUnsent {
				t.Errorf("create marks cleared %d times, want %d", o.unsent, tt.wantUnsent)
			}
			if tt.recordErr != nil && len(ups["a"].canceled) != 1 {
				t.Errorf("canceled %v, want the unrecorded job", ups["a"].canceled)
			}
			var held []string
			for _, name := range []string{"a", "b"} {
				if slices.Contains(lines[name], "work-1") {
					held = append(held, name)
				}
			}
			if !slices.Equal(held, tt.wantHeld) {
				t.Errorf("work-1 holds a slot or place at %v, want %v", held, tt.wantHeld)
			}
		})
	}
}

func TestPollsBackOffByHalfUpToTheCap(t *testing.T) {
	e := &job.Engine{PollInterval: 2 * time.Second}
	for _, tt := range []struct {
		attempt int
		want    time.Duration
	}{{0, 2 * time.Second}, {1, 3 * time.Second}, {2, 4500 * time.Millisecond}, {20, job.MaxPollInterval}} {
		if got := e.Delay(tt.attempt); got != tt.want {
			t.Errorf("Delay(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

func TestRunPercentAveragesTheJobsOwnFigures(t *testing.T) {
	running := func(p int) upstream.Result { return upstream.Result{Status: upstream.StatusProcessing, Progress: p} }
	done := upstream.Result{Status: upstream.StatusSucceeded}
	for _, tt := range []struct {
		name    string
		results []upstream.Result
		jobs    int
		want    int
	}{
		{name: "one job at its figure", results: []upstream.Result{running(45)}, jobs: 1, want: 45},
		{name: "a succeeded job counts 100", results: []upstream.Result{done, running(20)}, jobs: 2, want: 60},
		{name: "a job not read counts 0", results: []upstream.Result{running(80)}, jobs: 2, want: 40},
		{name: "figures out of range are clamped", results: []upstream.Result{running(250), running(-5)}, jobs: 2, want: 50},
		{name: "no jobs", jobs: 0, want: 0},
	} {
		if got := job.RunPercent(tt.results, tt.jobs); got != tt.want {
			t.Errorf("%s: RunPercent = %d, want %d", tt.name, got, tt.want)
		}
	}
}
