package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// Copier keeps the service's own copy of an output and returns its URL.
type Copier interface {
	Copy(ctx context.Context, src, keyBase string, kind domain.MediaKind) (string, error)
}

// Outputs is what a job's owner keeps of it: Want outputs of Kind, output
// i under KeyBase(i) (a key that depends only on the owner, so a repeated
// copy overwrites rather than duplicates).
type Outputs struct {
	Want    int
	Kind    domain.MediaKind
	KeyBase func(i int) string
}

// Progress is where a job's poll chain stands.
type Progress struct {
	// Attempt counts the polls so far.
	Attempt int
	// Errors counts the polls in a row that could not read the job or
	// keep its outputs.
	Errors int
	// Waited is the attempts spent waiting for a slot; they do not
	// lengthen the polls' backoff.
	Waited int
}

// Watched is the record that owns a running job, as the poll sees it. Its
// methods end the poll: each one's error is the poll's (an error means the
// message is delivered again).
type Watched interface {
	// Run is where the job runs (Upstream resolved).
	Run() domain.UpstreamRun
	Outputs() Outputs
	// Again polls once more after delay, at p. The owner may poll
	// sooner (a caller's deadline that comes before delay ends).
	Again(ctx context.Context, p Progress, delay time.Duration) error
	// Running is told, on each poll that finds the job still running, how
	// far along its upstream says it is: a percentage 0-100 (RunPercent).
	// The owner keeps what it shows; a figure lower than one already kept
	// is the owner's to ignore.
	Running(ctx context.Context, percent int)
	// Failed ends the owner's job failed, reason saying why in words.
	Failed(ctx context.Context, reason string) error
	// Finishing is called once every job succeeded, before any output is
	// copied: ok false is an owner that ended meanwhile (the poll stops
	// and nothing is copied); an error is retried.
	Finishing(ctx context.Context) (ok bool, err error)
	// Succeeded is the completion hook: the outputs are kept at urls.
	Succeeded(ctx context.Context, urls []string) error
}

// Poll looks at a job once: it reads every job of the run (using known
// reports for the jobs they name), fails the owner when one failed (and
// cancels the others), polls again with backoff while they run, and when
// all succeeded copies their outputs and calls the completion hook. A read
// or copy that fails is tried again up to MaxConsecutiveErrors polls in a
// row; a copy cut off by the invocation's deadline is tried again at once
// and not counted.
func (e *Engine) Poll(ctx context.Context, log *slog.Logger, w Watched, p Progress, known ...upstream.Result) error {
	run := w.Run()
	results, err := e.Read(ctx, run, known...)
	if err != nil {
		return e.Retry(ctx, log, w, p, fmt.Errorf("read upstream job: %w", err))
	}
	var outputs []string
	for _, r := range results {
		switch r.Status {
		case upstream.StatusSucceeded:
			outputs = append(outputs, r.Outputs...)
		case upstream.StatusFailed, upstream.StatusCanceled, upstream.StatusAborted:
			reason := r.Error
			if reason == "" {
				reason = "the job was " + r.Status + " upstream"
			}
			if len(run.Jobs) > 1 {
				e.Cancel(ctx, log, run)
			}
			return w.Failed(ctx, "upstream: "+reason)
		default:
			w.Running(ctx, RunPercent(results, len(run.Jobs)))
			return e.again(ctx, w, Progress{Attempt: p.Attempt + 1, Waited: p.Waited})
		}
	}
	if len(results) < len(run.Jobs) {
		w.Running(ctx, RunPercent(results, len(run.Jobs)))
		return e.again(ctx, w, Progress{Attempt: p.Attempt + 1, Waited: p.Waited})
	}
	ok, err := w.Finishing(ctx)
	if err != nil {
		return e.Retry(ctx, log, w, p, err)
	}
	if !ok {
		return nil
	}
	copyCtx, cancel := e.copyContext(ctx)
	defer cancel()
	urls, err := e.copyOutputs(copyCtx, w.Outputs(), outputs)
	switch {
	case err == nil:
		return w.Succeeded(ctx, urls)
	case copyCtx.Err() != nil && ctx.Err() == nil:
		// Whatever the copy said, it was stopped: a half-copied object is
		// not in the bucket (an upload aborted or never completed) and no
		// URL is published, so the next poll, by an invocation with time
		// to copy, copies again. Neither the provider's fault nor the
		// output's: not counted as an error.
		log.InfoContext(ctx, "output copy cut off by the invocation's deadline, polling again", "error", err)
		return w.Again(ctx, Progress{Attempt: p.Attempt + 1, Errors: p.Errors, Waited: p.Waited}, 0)
	case errors.Is(err, errBadOutputs):
		return w.Failed(ctx, err.Error())
	case errors.Is(err, media.ErrRejected):
		// The error may name the hosts the output led to: logs only.
		log.WarnContext(ctx, "upstream output rejected", "error", err)
		return w.Failed(ctx, publicCopyError(err))
	}
	return e.Retry(ctx, log, w, p, err)
}

// RunPercent is how far along a run of jobs is, by its upstream's own
// figures: each job's progress (a succeeded job's 100, a figure out of
// range clamped to 0-100), averaged over the run's jobs (one not read
// counts 0).
func RunPercent(results []upstream.Result, jobs int) int {
	if jobs <= 0 {
		return 0
	}
	sum := 0
	for _, r := range results {
		if r.Status == upstream.StatusSucceeded {
			sum += 100
		} else {
			sum += min(max(r.Progress, 0), 100)
		}
	}
	return min(sum/jobs, 100)
}

func (e *Engine) again(ctx context.Context, w Watched, p Progress) error {
	return w.Again(ctx, p, e.Delay(p.Attempt-p.Waited))
}

// Retry polls again after a failure to read the job or keep its outputs,
// and fails the owner when the failure is final or after too many in a
// row.
func (e *Engine) Retry(ctx context.Context, log *slog.Logger, w Watched, p Progress, cause error) error {
	var ue *upstream.Error
	permanent := errors.As(cause, &ue) && !ue.Temporary()
	if permanent || errors.Is(cause, upstream.ErrMalformed) || p.Errors+1 >= MaxConsecutiveErrors {
		log.WarnContext(ctx, "giving up on upstream job", "error", cause, "consecutive_errors", p.Errors+1)
		reason := upstream.Public(w.Run().Upstream, cause)
		if errors.As(cause, new(*copyError)) {
			reason = publicCopyError(cause)
		}
		return w.Failed(ctx, reason)
	}
	log.InfoContext(ctx, "upstream poll failed, will retry", "error", cause, "consecutive_errors", p.Errors+1)
	next := Progress{Attempt: p.Attempt + 1, Errors: p.Errors + 1, Waited: p.Waited}
	return w.Again(ctx, next, e.Delay(next.Attempt-next.Waited))
}

// Read reads every job of a run, in order, using known reports for the
// jobs they name; it stops at the first job that ended otherwise than
// succeeded (one failed job fails the owner).
func (e *Engine) Read(ctx context.Context, run domain.UpstreamRun, known ...upstream.Result) ([]upstream.Result, error) {
	p, err := e.Upstreams.Provider(run.Upstream)
	if err != nil {
		return nil, err
	}
	out := make([]upstream.Result, 0, len(run.Jobs))
next:
	for _, j := range run.Jobs {
		for _, k := range known {
			if k.ID == j.ID {
				out = append(out, k)
				continue next
			}
		}
		r, err := p.Get(ctx, j)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		if r.Final() && r.Status != upstream.StatusSucceeded {
			break
		}
	}
	return out, nil
}

// copyContext bounds the output copies by ctx's deadline (the Lambda's)
// less RecordMargin, so that a copy cut off leaves time to record it and
// hand the poll on; without a deadline the copies are not bounded here.
func (e *Engine) copyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-max(e.RecordMargin, 0)))
}

var errBadOutputs = errors.New("unusable upstream output")

// copyOutputs copies the outputs the owner wants into the bucket.
func (e *Engine) copyOutputs(ctx context.Context, o Outputs, outputs []string) ([]string, error) {
	want := max(o.Want, 1)
	if len(outputs) == 0 {
		return nil, fmt.Errorf("%w: the provider returned no output", errBadOutputs)
	}
	if len(outputs) < want {
		return nil, fmt.Errorf("%w: the provider returned %d outputs, %d were asked for", errBadOutputs, len(outputs), want)
	}
	urls := make([]string, 0, want)
	for i, src := range outputs[:want] {
		if strings.TrimSpace(src) == "" {
			return nil, fmt.Errorf("%w: output %d is empty", errBadOutputs, i)
		}
		u, err := e.Copier.Copy(ctx, src, o.KeyBase(i), o.Kind)
		if err != nil {
			return nil, &copyError{index: i, err: err}
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// copyError is an output that could not be copied.
type copyError struct {
	index int
	err   error
}

func (e *copyError) Error() string { return fmt.Sprintf("copy output %d: %v", e.index, e.err) }
func (e *copyError) Unwrap() error { return e.err }

// publicCopyError says why an output could not be kept, for the record:
// the rejection's reason or its host's answer; a failure of the connection
// or of the bucket, whose error may name addresses, is said in words.
func publicCopyError(err error) string {
	var ce *copyError
	if !errors.As(err, &ce) {
		return "the outputs could not be copied"
	}
	if reason := media.PublicReason(ce.err); reason != "" {
		return fmt.Sprintf("copy output %d: %s", ce.index, reason)
	}
	return fmt.Sprintf("copy output %d: it could not be fetched or stored", ce.index)
}
