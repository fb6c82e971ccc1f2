// Package job is the one engine that runs a job at an upstream for the
// record that owns it: a single generation, or a scene of a long-form
// video (a child job of its video, priced inside the video's hold). It
// takes a slot at the first route with room (failing over across routes),
// creates the job, handles a create whose answer was lost, polls the job
// with backoff, reads its outputs, copies them to storage and frees the
// slot. What differs between owners (where the job is recorded, how the
// owner ends) is asked of the owner through two small ports: Owner while
// the job is started, Watched while it runs.
package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// Upstreams are the upstreams' clients by routing name and their caps
// (*upstream.Router).
type Upstreams interface {
	Provider(name string) (upstream.Provider, error)
	// Limit is an upstream's cap on jobs at once; 0 is none.
	Limit(name string) int
}

// Slots caps the jobs running at once at each upstream, keyed by the
// routing file's upstream name. Generations and scenes wait in the same
// lines.
type Slots interface {
	AcquireSlot(ctx context.Context, provider, holder string, limit int, at time.Time) (bool, error)
	ReleaseSlot(ctx context.Context, provider, holder string) error
}

// Defaults of the engine's knobs.
const (
	DefaultPollInterval = 2 * time.Second
	MaxPollInterval     = 30 * time.Second
	// MaxConsecutiveErrors bounds the polls in a row that may fail to reach
	// the provider (or to copy the outputs) before the job's owner fails.
	MaxConsecutiveErrors = 5
)

// Engine runs jobs at the upstreams. Its zero knobs take defaults.
type Engine struct {
	Upstreams Upstreams
	// Slots caps the jobs at once per upstream; nil: no caps.
	Slots Slots
	// Copier keeps the service's copy of an output (polls only).
	Copier Copier
	// PollInterval is the first delay between polls; it grows by half each
	// poll up to MaxPollInterval.
	PollInterval time.Duration
	// RecordMargin is the time kept after the output copies' deadline (the
	// Lambda's less this) to record what happened; 0 is none.
	RecordMargin time.Duration
	Now          func() time.Time
}

func (e *Engine) now() time.Time { return domain.Now(e.Now) }

// Owner is the record that owns a job being started. The engine asks it to
// record each step, so that a retry or a redelivery knows where the job
// stands.
type Owner interface {
	// Holder names the owner in its upstream's slot line. It is also the id
	// the owner's callback URL carries (Hook), by which a job whose
	// create's answer was lost is looked for.
	Holder() string
	// Hook is the URL the upstream calls when the job ends; "" for none.
	Hook() string
	// Sending records that a create is about to be sent to the upstream
	// named: a retry that finds the mark knows a job may exist and never
	// creates another.
	Sending(ctx context.Context, upstream string) error
	// Unsent clears that mark: the create certainly left no job running.
	Unsent(ctx context.Context)
	// Record records the jobs the creates started.
	Record(ctx context.Context, run domain.UpstreamRun) error
}

// Started is a job started, or an owner waiting for a slot.
type Started struct {
	Run domain.UpstreamRun
	// WaitingAt names the upstream in whose line the owner waits (every
	// route was at its cap); Run is empty then, and the owner asks again
	// later.
	WaitingAt string
}

// slotError is a slot line that could not be read or written; the owner
// holds no slot or place in line.
type slotError struct{ Err error }

func (e *slotError) Error() string { return "upstream slot: " + e.Err.Error() }
func (e *slotError) Unwrap() error { return e.Err }

// Failure is a job that did not start. When Held, the owner still holds
// the slot at Upstream, which it frees (Release) once it has recorded the
// failure.
type Failure struct {
	// Upstream is the route's upstream that answered last ("" when no
	// route was tried).
	Upstream string
	Held     bool
	// Refused is the upstream's final word on the input (a 4xx); Cause
	// is then its *upstream.Error.
	Refused bool
	// Unknown is a create whose answer was lost: it may have started a
	// paid job, so it is never sent again. Any job found (by Hook) and the
	// jobs made before it were canceled, and the operator was alerted.
	Unknown bool
	// Recording is the owner's own error recording the job (Sending or
	// Record), as it returned it; any job made was canceled.
	Recording bool
	// Reason says what happened, for the owner's record.
	Reason string
	Cause  error
}

func (f *Failure) Error() string {
	if f.Cause == nil {
		return f.Reason
	}
	return f.Reason + ": " + f.Cause.Error()
}

func (f *Failure) Unwrap() error { return f.Cause }

// Slot is the upstream whose slot the owner still holds, "" for none.
func (f *Failure) Slot() string {
	if f.Held {
		return f.Upstream
	}
	return ""
}

// Start runs an owner's job on the first route that takes it: one whose
// upstream has a free slot and that certainly started nothing when it
// refused passes to the next. When every route's upstream is at its cap,
// the owner waits in the first one's line (Started.WaitingAt). An error is
// a *slotError or a *Failure.
func (e *Engine) Start(ctx context.Context, log *slog.Logger, o Owner, plans []routing.Plan) (Started, error) {
	holder := o.Holder()
	capped := ""
	var lastErr error
	lastName := ""
	for _, plan := range plans {
		name := plan.Route.Upstream
		got, err := e.acquire(ctx, name, holder)
		if err != nil {
			e.Release(ctx, log, capped, holder)
			return Started{}, &slotError{Err: fmt.Errorf("%s at %s: %w", holder, name, err)}
		}
		if !got {
			if capped == "" {
				capped = name
			} else {
				e.Release(ctx, log, name, holder) // wait only in the first line
			}
			continue
		}
		if capped != "" {
			e.Release(ctx, log, capped, holder) // took a slot of a later route: leave the line
			capped = ""
		}
		run, err := e.submit(ctx, log, o, plan)
		if err == nil {
			return Started{Run: run}, nil
		}
		if !errors.Is(err, upstream.ErrNotStarted) {
			return Started{}, err
		}
		log.WarnContext(ctx, "upstream started nothing; trying the next route", "upstream", name, "error", err)
		e.Release(ctx, log, name, holder)
		lastErr, lastName = err, name
	}
	if capped != "" {
		return Started{WaitingAt: capped}, nil
	}
	reason := "no upstream accepted the job"
	if lastErr != nil {
		reason = upstream.Public(lastName, lastErr)
	}
	return Started{}, &Failure{Upstream: lastName, Reason: reason, Cause: lastErr}
}

// submit sends the creates of one route whose slot the owner holds: one
// job, or plan.Jobs (one per image). An error wrapping
// upstream.ErrNotStarted (and no *Failure) left nothing behind, and the
// next route may be tried.
func (e *Engine) submit(ctx context.Context, log *slog.Logger, o Owner, plan routing.Plan) (domain.UpstreamRun, error) {
	name := plan.Route.Upstream
	log = log.With("upstream", name, "upstream_model", plan.Route.Model)
	p, err := e.Upstreams.Provider(name)
	if err != nil {
		return domain.UpstreamRun{}, &Failure{Upstream: name, Held: true, Reason: "the route names an unknown upstream", Cause: err}
	}
	if err := o.Sending(ctx, name); err != nil {
		return domain.UpstreamRun{}, &Failure{Upstream: name, Held: true, Recording: true, Reason: "the job could not be recorded", Cause: err}
	}
	run := domain.UpstreamRun{Upstream: name, Model: plan.Route.Model}
	hook := o.Hook()
	since := e.now()
	for i := range max(plan.Jobs, 1) {
		job, err := p.Submit(ctx, plan.Route.Model, plan.Input, hook)
		if err == nil {
			run.Jobs = append(run.Jobs, job)
			continue
		}
		var unknown *upstream.UnknownOutcomeError
		var refused *upstream.Error
		switch {
		case errors.As(err, &unknown):
			e.resolveUnknown(ctx, log, p, o, run, since, err)
			return domain.UpstreamRun{}, &Failure{Upstream: name, Held: true, Unknown: true,
				Reason: "the upstream's answer to the job was lost", Cause: err}
		case errors.Is(err, upstream.ErrNotStarted) && i == 0:
			o.Unsent(context.WithoutCancel(ctx))
			return domain.UpstreamRun{}, err
		case errors.As(err, &refused) && refused.StatusCode < 500:
			e.cancel(ctx, log, p, run.Jobs)
			o.Unsent(context.WithoutCancel(ctx))
			return domain.UpstreamRun{}, &Failure{Upstream: name, Held: true, Refused: true,
				Reason: "upstream " + name + " refused the job: " + refused.Message, Cause: err}
		default:
			e.cancel(ctx, log, p, run.Jobs)
			o.Unsent(context.WithoutCancel(ctx))
			return domain.UpstreamRun{}, &Failure{Upstream: name, Held: true, Reason: upstream.Public(name, err), Cause: err}
		}
	}
	// Recorded even if the caller is being stopped: the jobs exist.
	if err := o.Record(context.WithoutCancel(ctx), run); err != nil {
		// The jobs run but are not recorded: stop them rather than pay for
		// outputs nobody will fetch.
		e.cancel(ctx, log, p, run.Jobs)
		return domain.UpstreamRun{}, &Failure{Upstream: name, Held: true, Recording: true, Reason: "the job could not be recorded", Cause: err}
	}
	return run, nil
}

// resolveUnknown handles a create whose outcome is unknown: it may have
// started a paid job, so it is never sent again (the owner's Sending mark
// stays). The job is looked for among the upstream's recent ones (by the
// holder its callback URL carries) and canceled with the jobs made before
// it, and the operator is told.
func (e *Engine) resolveUnknown(ctx context.Context, log *slog.Logger, p upstream.Provider, o Owner, run domain.UpstreamRun, since time.Time, cause error) {
	found, ok, err := domain.UpstreamJob{}, false, error(nil)
	if o.Hook() != "" {
		found, ok, err = p.FindJob(ctx, o.Holder(), since)
	}
	if ok {
		run.Jobs = append(run.Jobs, found)
	}
	e.cancel(ctx, log, p, run.Jobs)
	lookup := ""
	if err != nil {
		lookup = err.Error()
	}
	log.ErrorContext(ctx, "upstream create outcome unknown", "alert", "operator", "holder", o.Holder(), "cause", cause.Error(),
		"found_job", found.ID, "lookup_error", lookup, "canceled_jobs", len(run.Jobs),
		"action", "check the upstream's dashboard for a job of this holder that is still running or was billed")
}

// acquire takes a slot of an upstream; without a cap it always has one.
func (e *Engine) acquire(ctx context.Context, name, holder string) (bool, error) {
	limit := e.Upstreams.Limit(name)
	if e.Slots == nil || limit <= 0 {
		return true, nil
	}
	return e.Slots.AcquireSlot(ctx, name, holder, limit, e.now())
}

// Release frees the holder's slot (or place in line) at an upstream, if
// caps apply; a failure leaves it to the holder's next release or the
// sweeper.
func (e *Engine) Release(ctx context.Context, log *slog.Logger, name, holder string) {
	if name == "" || e.Slots == nil || e.Upstreams == nil || e.Upstreams.Limit(name) <= 0 {
		return
	}
	if err := e.Slots.ReleaseSlot(ctx, name, holder); err != nil {
		log.WarnContext(ctx, "could not release the upstream slot", "upstream", name, "holder", holder, "error", err)
	}
}

// Cancel asks a run's upstream to stop its jobs; failures are logged.
func (e *Engine) Cancel(ctx context.Context, log *slog.Logger, run domain.UpstreamRun) {
	if len(run.Jobs) == 0 {
		return
	}
	p, err := e.Upstreams.Provider(run.Upstream)
	if err != nil {
		log.WarnContext(ctx, "could not cancel upstream jobs", "upstream", run.Upstream, "error", err)
		return
	}
	e.cancel(ctx, log, p, run.Jobs)
}

func (e *Engine) cancel(ctx context.Context, log *slog.Logger, p upstream.Provider, jobs []domain.UpstreamJob) {
	for _, j := range jobs {
		if err := p.Cancel(ctx, j); err != nil {
			log.WarnContext(ctx, "could not cancel upstream job", "upstream_id", j.ID, "error", err)
		}
	}
}

// Delay is the wait before poll number attempt (0-based).
func (e *Engine) Delay(attempt int) time.Duration {
	d := cmp.Or(max(e.PollInterval, 0), DefaultPollInterval)
	for i := 0; i < attempt && d < MaxPollInterval; i++ {
		d += d / 2
	}
	return min(d, MaxPollInterval)
}
