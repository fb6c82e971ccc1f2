package generation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// PollMessage asks the poller to look at a generation once.
type PollMessage struct {
	GenerationID string `json:"generation_id"`
	// Attempt counts the polls so far; it sets the next delay.
	Attempt int `json:"attempt,omitempty"`
	// Errors counts the polls in a row that could not reach the provider.
	Errors int `json:"errors,omitempty"`
	// Waited is the attempts the generation spent waiting for an upstream
	// slot (each a turn of the poll chain, so two deliveries never submit
	// it twice); they do not lengthen the polls' backoff.
	Waited int `json:"waited,omitempty"`
	// Resume starts a new chain after the one in flight was lost (the local
	// runtime's in-memory queue, on restart): it takes over from whatever
	// attempt held the chain.
	Resume bool `json:"resume,omitempty"`
	// Reported is a final job state the provider's callback reported: the
	// poll acts on it (copies the outputs, or fails the generation) without
	// reading that job again. Such a poll takes the chain where it stands
	// unless a delivery is running it, and is dropped if one is.
	Reported *JobReport `json:"reported,omitempty"`
}

// JobReport is the wire form of a final upstream.Result.
type JobReport struct {
	ID      string   `json:"id"`
	Status  string   `json:"status"`
	Outputs []string `json:"outputs,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func reportOf(r upstream.Result) *JobReport {
	return &JobReport{ID: r.ID, Status: r.Status, Outputs: r.Outputs, Error: r.Error}
}

func (j *JobReport) result() upstream.Result {
	return upstream.Result{ID: j.ID, Status: j.Status, Outputs: j.Outputs, Error: j.Error}
}

// maxReportBytes bounds a poll message carrying a job report, well under
// SQS's 256 KiB; a larger report (outputs inlined as data URLs, say) is left
// out and the poll reads the job from the provider.
const maxReportBytes = 128 << 10

// ParsePollMessage decodes a queue message body.
func ParsePollMessage(body string) (PollMessage, error) {
	var m PollMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return PollMessage{}, fmt.Errorf("poll message: %w", err)
	}
	if m.GenerationID == "" {
		return PollMessage{}, errors.New("poll message: no generation_id")
	}
	return m, nil
}

// Poll looks at a generation once: it settles a finished one, fails one past
// its deadline, or reads the upstream job and acts on its state. It returns
// an error only when the message should be delivered again; every write it
// makes is conditional, so a repeated or concurrent delivery changes nothing
// twice.
func (s *Service) Poll(ctx context.Context, m PollMessage) error {
	g, err := s.Store.GetGeneration(ctx, m.GenerationID)
	if errors.Is(err, domain.ErrNotFound) {
		s.log().WarnContext(ctx, "poll for a generation that does not exist", "generation_id", m.GenerationID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("poll %s: %w", m.GenerationID, err)
	}
	log := s.log().With("user_id", g.UserID, "generation_id", g.UUID, "upstream_id", g.UpstreamID)
	if g.Status.Terminal() {
		return s.settleAndNotify(ctx, log, g)
	}
	if !s.now().Before(g.Deadline) {
		s.cancelAll(ctx, log, g)
		return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: domain.TimedOutError})
	}
	if !g.CancelAt.IsZero() && !s.now().Before(g.CancelAt) && !g.Files.Finishing {
		return s.cancelAtDeadline(ctx, log, g)
	}
	if g.UpstreamID == "" {
		return s.submitWaiting(ctx, log, g, m)
	}
	if ok, err := s.claim(ctx, log, g, &m); err != nil || !ok {
		return err
	}
	var known []upstream.Result
	if m.Reported != nil {
		known = append(known, m.Reported.result())
	}
	results, err := s.read(ctx, g, known...)
	if err != nil {
		return s.pollFailed(ctx, log, g, m, fmt.Errorf("read upstream job: %w", err))
	}
	done, err := s.apply(ctx, log, g, results)
	if errors.Is(err, errCopyCutOff) {
		// Neither the provider's fault nor the output's: not counted as an
		// error, and polled again at once by an invocation with time to
		// copy (the generation's deadline bounds the tries).
		log.InfoContext(ctx, "output copy cut off by the invocation's deadline, polling again", "error", err)
		return s.nextAfter(ctx, log, PollMessage{GenerationID: g.UUID, Attempt: m.Attempt + 1, Errors: m.Errors, Waited: m.Waited}, 0)
	}
	if err != nil {
		return s.pollFailed(ctx, log, g, m, err)
	}
	if done {
		return nil
	}
	next := PollMessage{GenerationID: g.UUID, Attempt: m.Attempt + 1, Waited: m.Waited}
	delay := s.pollDelay(next.Attempt - next.Waited)
	if !g.CancelAt.IsZero() {
		// The caller's deadline is kept to within a poll, not the backoff.
		delay = max(min(delay, g.CancelAt.Sub(s.now())), 0)
	}
	return s.nextAfter(ctx, log, next, delay)
}

// cancelAtDeadline ends a generation whose caller's deadline
// (deadline_seconds) passed: its jobs are canceled upstream and it ends
// canceled with reason DeadlineError, settled as a cancel is (refunded);
// one that never reached the provider is released, as work that never
// started (settle). A generation storing its outputs is left to complete.
func (s *Service) cancelAtDeadline(ctx context.Context, log *slog.Logger, g domain.Generation) error {
	wrote, err := s.finishOnce(ctx, log, g, domain.Outcome{Status: domain.StatusCanceled, Error: domain.DeadlineError})
	if wrote {
		s.cancelAll(ctx, log, g)
	}
	if errors.Is(err, domain.ErrFinishing) {
		return nil // the claim won: the delivery that holds it completes it
	}
	return err
}

// jobsOf lists a generation's upstream jobs (records made before jobs were
// listed have only the id).
func jobsOf(g domain.Generation) []domain.UpstreamJob {
	if len(g.UpstreamJobs) > 0 {
		return g.UpstreamJobs
	}
	if g.UpstreamID != "" {
		return []domain.UpstreamJob{{ID: g.UpstreamID}}
	}
	return nil
}

// provider is the client of the upstream a generation ran on.
func (s *Service) provider(g domain.Generation) (upstream.Provider, error) {
	name := g.Upstream
	if name == "" {
		// Recorded before routing: its first route's upstream.
		if routes := s.Upstreams.Routes(g.Model, g.ModelVersion); len(routes) > 0 {
			name = routes[0].Upstream
		}
	}
	return s.Upstreams.Provider(name)
}

// read reads every job of a generation, in order, using known reports for
// the jobs they name.
func (s *Service) read(ctx context.Context, g domain.Generation, known ...upstream.Result) ([]upstream.Result, error) {
	p, err := s.provider(g)
	if err != nil {
		return nil, err
	}
	jobs := jobsOf(g)
	out := make([]upstream.Result, 0, len(jobs))
next:
	for _, j := range jobs {
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
			break // one failed job fails the generation
		}
	}
	return out, nil
}

// apply acts on the jobs' states: one failed, canceled or aborted fails the
// generation (the others are canceled); all succeeded complete it with
// their outputs in job order; otherwise nothing changes. An error is a
// failure to copy the outputs that a later try may overcome; errCopyCutOff
// is a copy stopped by the invocation's deadline.
func (s *Service) apply(ctx context.Context, log *slog.Logger, g domain.Generation, results []upstream.Result) (done bool, err error) {
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
			if len(jobsOf(g)) > 1 {
				s.cancelAll(ctx, log, g)
			}
			return true, s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: "upstream: " + reason})
		default:
			s.noteProgress(ctx, log, g, results)
			return false, nil
		}
	}
	if len(results) < len(jobsOf(g)) {
		s.noteProgress(ctx, log, g, results)
		return false, nil
	}
	// Before the first byte is copied the record is claimed as finishing,
	// in one conditional write that a cancel's cannot pass: either the
	// cancel won (the credits went back) and nothing is ever copied, or
	// from here the generation ends completed and charged, or failed with
	// whatever was copied deleted (settle).
	if err := s.Store.ClaimGenerationFinish(ctx, g.UUID, s.now()); err != nil {
		if !errors.Is(err, domain.ErrConflict) {
			return false, fmt.Errorf("claim %s as finishing: %w", g.UUID, err)
		}
		ended, rerr := s.Store.GetGeneration(ctx, g.UUID)
		if rerr != nil {
			return false, fmt.Errorf("reread %s: %w", g.UUID, rerr)
		}
		log.InfoContext(ctx, "the generation ended before its outputs were copied; nothing is copied", "status", ended.Status)
		return true, s.settleAndNotify(ctx, log, ended)
	}
	g.Files.Finishing = true
	copyCtx, cancel := s.copyContext(ctx)
	defer cancel()
	urls, err := s.copyOutputs(copyCtx, g, outputs)
	if err != nil {
		if copyCtx.Err() != nil && ctx.Err() == nil {
			// Whatever the copy said, it was stopped: a half-copied object
			// is not in the bucket (an upload aborted or never completed)
			// and no URL is published, so the next poll copies again.
			return false, fmt.Errorf("%w: %w", errCopyCutOff, err)
		}
		if errors.Is(err, errBadOutputs) {
			return true, s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: err.Error()})
		}
		if errors.Is(err, media.ErrRejected) {
			// The error may name the hosts the output led to: logs only.
			log.WarnContext(ctx, "upstream output rejected", "error", err)
			return true, s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: publicCopyError(err)})
		}
		return false, err
	}
	expires, err := s.keepOutputs(ctx, g)
	if err != nil {
		// Nothing is final yet: the next poll copies and tags again.
		return false, err
	}
	wrote, err := s.finishOnce(ctx, log, g, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: urls, OutputExpiresAt: expires})
	if err == nil && !wrote {
		// Another delivery ended the record while this one copied (this
		// one's lease ran out): the objects it just wrote are deleted
		// unless they are that delivery's completed outputs.
		err = s.dropLateCopy(ctx, log, g.UUID)
	}
	return true, err
}

// dropLateCopy deletes a generation's objects written by a copy that
// finished after the record ended otherwise than completed with its
// outputs kept. It reads the record after the copy's last write: a delete
// of the outputs marks the record removing before it lists the objects,
// so either that listing saw this copy's objects or this read sees the
// removal.
func (s *Service) dropLateCopy(ctx context.Context, log *slog.Logger, uuid string) error {
	g, err := s.Store.GetGeneration(ctx, uuid)
	if err != nil {
		return fmt.Errorf("reread %s after its copy: %w", uuid, err)
	}
	if g.Status == domain.StatusCompleted && g.Files.Removal == domain.RemovalNone {
		return nil
	}
	log.InfoContext(ctx, "a late copy's objects are deleted", "status", g.Status, "removal", g.Files.Removal)
	return s.deleteOutputs(ctx, g.UUID)
}

// deleteOutputs deletes every object under a generation's prefix.
func (s *Service) deleteOutputs(ctx context.Context, uuid string) error {
	if s.Outputs == nil {
		return fmt.Errorf("delete the outputs of %s: no bucket to delete them from", uuid)
	}
	keys, err := s.Outputs.Keys(ctx, media.GenerationPrefix(uuid))
	if err != nil {
		return fmt.Errorf("list the outputs of %s: %w", uuid, err)
	}
	if err := s.Outputs.Delete(ctx, keys); err != nil {
		return fmt.Errorf("delete the outputs of %s: %w", uuid, err)
	}
	return nil
}

// keepOutputs gives the copied outputs their account's retention and says
// when it ends. The account is read at completion: a change of retention
// applies to the outputs completed after it.
func (s *Service) keepOutputs(ctx context.Context, g domain.Generation) (time.Time, error) {
	a, err := s.Store.GetAccount(ctx, g.UserID)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the outputs' retention: %w", err)
	}
	days := a.RetentionDays()
	var retainer media.Retainer
	if s.Outputs != nil {
		retainer = s.Outputs
	}
	if err := media.KeepFor(ctx, retainer, media.GenerationPrefix(g.UUID), days); err != nil {
		return time.Time{}, err
	}
	return domain.RetentionEnd(s.now(), days), nil
}

// errCopyCutOff is an output copy stopped by the invocation's deadline.
var errCopyCutOff = errors.New("output copy cut off by the deadline")

// copyContext bounds the output copies by the Lambda's deadline less
// RecordMargin, so that a copy cut off leaves time to record it and hand
// the poll on; without a deadline the copies are not bounded here.
func (s *Service) copyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-s.recordMargin()))
}

// cancelAll asks the upstream to stop a generation's jobs.
func (s *Service) cancelAll(ctx context.Context, log *slog.Logger, g domain.Generation) {
	jobs := jobsOf(g)
	if len(jobs) == 0 {
		return
	}
	p, err := s.provider(g)
	if err != nil {
		log.WarnContext(ctx, "could not cancel upstream jobs", "error", err)
		return
	}
	s.cancelJobs(ctx, log, p, jobs)
}

// submitWaiting starts a generation not yet at an upstream: one waiting
// for a slot asks again; one that never waited was cut off between its
// record and its submission, and fails (after looking for a job its lost
// create may have started). Each ask is a turn of the poll chain, claimed
// before it may submit and handed on to the next message it enqueues, so
// two deliveries of one ask (SQS delivers at least once) never both take
// the generation's slot and submit it: the second finds the chain taken.
func (s *Service) submitWaiting(ctx context.Context, log *slog.Logger, g domain.Generation, m PollMessage) error {
	capped := false
	for _, name := range routeUpstreams(s.Upstreams, g) {
		capped = capped || (s.Slots != nil && s.Upstreams.Limit(name) > 0)
	}
	if !capped {
		s.findLost(ctx, log, g)
		return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: "the job was never submitted upstream"})
	}
	if ok, err := s.claim(ctx, log, g, &m); err != nil || !ok {
		return err
	}
	next := m.Attempt + 1
	input, err := s.wholeInput(ctx, g)
	if err != nil {
		// The bucket did not answer: the message comes back and asks again
		// (until the deadline, when the sweeper fails the generation).
		return fmt.Errorf("submit waiting generation: %w", err)
	}
	req, err := s.requestOf(g, input)
	if err != nil {
		return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: "the recorded request no longer validates: " + err.Error()})
	}
	if req, err = s.resolveFiles(ctx, g.UserID, req); err != nil {
		if errors.Is(err, domain.ErrInvalid) {
			return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: "an input file is no longer usable: " + err.Error()})
		}
		return fmt.Errorf("submit waiting generation: %w", err)
	}
	plans, err := s.Upstreams.Plans(ctx, req.Variant, req.Resolved, req.ImageCount)
	if err != nil {
		if errors.Is(err, upstream.ErrNotStarted) {
			return s.nextAfter(ctx, log, PollMessage{GenerationID: g.UUID, Attempt: next, Waited: next}, SlotWait)
		}
		log.WarnContext(ctx, "the request cannot be sent upstream", "error", err)
		reason := upstream.Public("", err)
		var conv *routing.ConvertError
		if errors.As(err, &conv) {
			reason = conv.Error()
		}
		return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: "the request cannot be sent upstream: " + reason})
	}
	waiting, err := s.start(ctx, log, &g, plans, next)
	switch {
	case errors.Is(err, ErrUpstreamUnavailable) || errors.Is(err, ErrUpstreamRefused) || errors.Is(err, domain.ErrConflict):
		return nil // failed and settled, or submitted by another delivery
	case err != nil:
		return err
	}
	// The next ask, or the first poll, is enqueued: hand the chain to it.
	if _, _, err := s.Store.ClaimPoll(ctx, g.UUID, next, s.now(), time.Time{}); err != nil {
		log.WarnContext(ctx, "could not hand the poll chain on", "attempt", next, "error", err)
	}
	if waiting {
		return nil
	}
	log.InfoContext(ctx, "generation submitted after waiting for a slot", "upstream", g.Upstream, "upstream_id", g.UpstreamID)
	return nil
}

// findLost looks for a job a create cut off by a crash may have started,
// at each route's upstream, and cancels it.
func (s *Service) findLost(ctx context.Context, log *slog.Logger, g domain.Generation) {
	if s.UpstreamWebhook == "" {
		return
	}
	for _, name := range routeUpstreams(s.Upstreams, g) {
		p, err := s.Upstreams.Provider(name)
		if err != nil {
			continue
		}
		if job, ok, err := p.FindJob(ctx, g.UUID, g.CreatedAt); err == nil && ok {
			log.ErrorContext(ctx, "a job of a generation never recorded was found and canceled", "alert", "operator",
				"upstream", name, "upstream_id", job.ID)
			s.cancelJobs(ctx, log, p, []domain.UpstreamJob{job})
		}
	}
}

// ErrNotItsJob is an upstream callback whose job is not the generation's.
var ErrNotItsJob = errors.New("the upstream job is not this generation's")

// report acts on the provider's callback for a final job without waiting
// on anything slow: it records the job's state in a poll message, enqueued
// with no delay, and that poll copies the outputs (or fails the generation,
// like any poll: one path writes every outcome). So the callback never
// downloads and answers well within API Gateway's 29 s. A callback repeated
// enqueues the poll again: the poll chain runs one of them at a time, the
// outputs go to the same keys, and the outcome is written and the hold
// settled once.
func (s *Service) report(ctx context.Context, g domain.Generation, r upstream.Result) error {
	if !slices.ContainsFunc(jobsOf(g), func(j domain.UpstreamJob) bool { return j.ID == r.ID }) {
		return fmt.Errorf("upstream callback for %s: %w", g.UUID, ErrNotItsJob)
	}
	log := s.log().With("user_id", g.UserID, "generation_id", g.UUID, "upstream", g.Upstream, "upstream_id", r.ID)
	if g.Status.Terminal() {
		// The poll that made it final settled the hold (or its redelivery will).
		return nil
	}
	m := PollMessage{GenerationID: g.UUID, Reported: reportOf(r)}
	if body, err := json.Marshal(m); err != nil || len(body) > maxReportBytes {
		m.Reported = nil
	}
	if err := s.enqueue(ctx, m, 0); err != nil {
		return fmt.Errorf("upstream callback for %s: %w", g.UUID, err)
	}
	log.InfoContext(ctx, "upstream job report queued", "status", r.Status, "outputs", len(r.Outputs))
	return nil
}

// ErrPollBusy is a poll whose attempt another delivery is running: the
// message comes back after the visibility timeout, when that delivery has
// handed the chain on (and this one is dropped) or died (and this one takes
// over).
var ErrPollBusy = errors.New("another delivery of this poll is running")

// claim takes the generation's poll chain for attempt m.Attempt. A message
// the chain has moved past is a duplicate: it is dropped (ok false, no
// error).
func (s *Service) claim(ctx context.Context, log *slog.Logger, g domain.Generation, m *PollMessage) (bool, error) {
	lease := cmp.Or(max(s.PollLease, 0), DefaultPollLease)
	now := s.now()
	ok, holder, err := s.Store.ClaimPoll(ctx, g.UUID, m.Attempt, now, now.Add(lease))
	switch {
	case err == nil && !ok && m.Resume:
		m.Attempt = holder + 1
		ok, holder, err = s.Store.ClaimPoll(ctx, g.UUID, m.Attempt, now, now.Add(lease))
	case err == nil && !ok && m.Reported != nil && holder > m.Attempt:
		// A reported job takes the chain at the attempt it stands at, which
		// succeeds only when no delivery holds it (handed on to a poll not
		// yet delivered, that then finds the chain taken or the generation
		// final).
		m.Attempt = holder
		ok, holder, err = s.Store.ClaimPoll(ctx, g.UUID, m.Attempt, now, now.Add(lease))
	}
	switch {
	case err != nil:
		return false, fmt.Errorf("claim poll %d of %s: %w", m.Attempt, g.UUID, err)
	case ok:
		return true, nil
	case holder > m.Attempt:
		log.InfoContext(ctx, "duplicate poll dropped", "attempt", m.Attempt, "chain_at", holder)
		return false, nil
	case m.Reported != nil:
		// Another delivery runs the chain (a poll, or the same report
		// repeated): it, or the poll it hands on to, reads the job final.
		// Waiting for the visibility timeout would only delay this.
		log.InfoContext(ctx, "job report left to the poll running", "attempt", m.Attempt)
		return false, nil
	}
	return false, fmt.Errorf("poll %d of %s: %w", m.Attempt, g.UUID, ErrPollBusy)
}

// next enqueues the next poll and hands the chain to it, so a redelivery of
// the current message is dropped as a duplicate. If the hand-over is lost,
// the next poll claims the chain itself; a redelivery after the lease sends
// one more next poll, and the chain drops whichever of the two comes second.
func (s *Service) next(ctx context.Context, log *slog.Logger, m PollMessage) error {
	return s.nextAfter(ctx, log, m, s.pollDelay(m.Attempt-m.Waited))
}

// nextAfter is next with the delay given.
func (s *Service) nextAfter(ctx context.Context, log *slog.Logger, m PollMessage, delay time.Duration) error {
	if err := s.enqueue(ctx, m, delay); err != nil {
		return err
	}
	if _, _, err := s.Store.ClaimPoll(ctx, m.GenerationID, m.Attempt, s.now(), time.Time{}); err != nil {
		log.WarnContext(ctx, "could not hand the poll chain on", "attempt", m.Attempt, "error", err)
	}
	return nil
}

var errBadOutputs = errors.New("unusable upstream output")

// copyOutputs copies every output into the bucket under keys that depend only
// on the generation, so a repeated copy overwrites rather than duplicates.
func (s *Service) copyOutputs(ctx context.Context, g domain.Generation, outputs []string) ([]string, error) {
	want := 1
	if g.Kind == domain.MediaImage {
		want = g.ImageCount
	}
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
		u, err := s.Copier.Copy(ctx, src, media.OutputKeyBase(g.UUID, i), g.Kind)
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

// pollFailed re-polls after a failure to reach the provider, and fails the
// generation after too many in a row.
func (s *Service) pollFailed(ctx context.Context, log *slog.Logger, g domain.Generation, m PollMessage, cause error) error {
	var ue *upstream.Error
	permanent := errors.As(cause, &ue) && !ue.Temporary()
	if permanent || errors.Is(cause, upstream.ErrMalformed) || m.Errors+1 >= MaxConsecutiveErrors {
		log.WarnContext(ctx, "giving up on upstream job", "error", cause, "consecutive_errors", m.Errors+1)
		reason := upstream.Public(g.Upstream, cause)
		if errors.As(cause, new(*copyError)) {
			reason = publicCopyError(cause)
		}
		return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: reason})
	}
	log.InfoContext(ctx, "upstream poll failed, will retry", "error", cause, "consecutive_errors", m.Errors+1)
	return s.next(ctx, log, PollMessage{GenerationID: g.UUID, Attempt: m.Attempt + 1, Errors: m.Errors + 1, Waited: m.Waited})
}

// ErrBadCallback is a provider callback whose signature is missing, wrong
// or stale, or that names no generation of ours.
var ErrBadCallback = errors.New("the callback's signature is missing, wrong or stale")

func (s *Service) enqueue(ctx context.Context, m PollMessage, delay time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode poll message: %w", err)
	}
	var lastErr error
	for i := 0; i < enqueueAttempts; i++ {
		if lastErr = s.Queue.Send(ctx, body, delay); lastErr == nil {
			return nil
		}
	}
	return fmt.Errorf("enqueue poll of %s: %w", m.GenerationID, lastErr)
}

// noteProgress stores the provider's progress figure of a generation still
// running, when it grew: each job's own (a succeeded one's 100), averaged
// over the generation's jobs. A failure to store it is logged: the figure
// is shown, not needed.
func (s *Service) noteProgress(ctx context.Context, log *slog.Logger, g domain.Generation, results []upstream.Result) {
	jobs := len(jobsOf(g))
	if jobs == 0 {
		return
	}
	sum := 0
	for _, r := range results {
		if r.Status == upstream.StatusSucceeded {
			sum += 100
		} else {
			sum += min(max(r.Progress, 0), 100)
		}
	}
	progress := sum / jobs
	if progress <= g.Progress {
		return
	}
	if err := s.Store.SetGenerationProgress(ctx, g.UUID, progress); err != nil {
		log.WarnContext(ctx, "could not store the provider's progress", "progress", progress, "error", err)
	}
}
