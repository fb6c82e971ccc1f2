package generation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/job"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// PollMessage asks the poller to look at a generation once.
type PollMessage struct {
	// Kind is job.KindGeneration (messages enqueued before kinds have
	// none, read the same).
	Kind         string `json:"kind,omitempty"`
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

// parsePollMessage decodes a queue message body.
func parsePollMessage(body string) (PollMessage, error) {
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
	p := job.Progress{Attempt: m.Attempt, Errors: m.Errors, Waited: m.Waited}
	w := &watchedGeneration{s: s, log: log, g: g, p: p}
	return s.engine().Poll(ctx, log, w, p, known...)
}

// watchedGeneration is a generation whose job the engine polls.
type watchedGeneration struct {
	s   *Service
	log *slog.Logger
	g   domain.Generation
	// p is where the poll chain stood at this poll.
	p job.Progress
}

func (w *watchedGeneration) Run() domain.UpstreamRun { return w.s.runOf(w.g) }

func (w *watchedGeneration) Outputs() job.Outputs {
	want := 1
	if w.g.Kind == domain.MediaImage {
		want = w.g.ImageCount
	}
	return job.Outputs{Want: want, Kind: w.g.Kind, KeyBase: func(i int) string { return media.OutputKeyBase(w.g.UUID, i) }}
}

// Again enqueues the next poll. A caller's deadline (deadline_seconds) is
// kept to within a poll, not the backoff: the poll comes no later than
// the deadline, and cancels the generation then (unless it is storing its
// outputs, which the deadline does not stop).
func (w *watchedGeneration) Again(ctx context.Context, p job.Progress, delay time.Duration) error {
	return w.s.nextAfter(ctx, w.log, PollMessage{GenerationID: w.g.UUID, Attempt: p.Attempt, Errors: p.Errors, Waited: p.Waited}, w.s.byDeadline(w.g, delay))
}

// byDeadline is a poll's delay cut to come no later than the generation's
// caller's deadline (deadline_seconds), when it has one and is not storing
// its outputs (which the deadline does not stop).
func (s *Service) byDeadline(g domain.Generation, delay time.Duration) time.Duration {
	if g.CancelAt.IsZero() || g.Files.Finishing {
		return delay
	}
	return max(min(delay, g.CancelAt.Sub(s.now())), 0)
}

// Running stores the provider's progress figure of the generation when it
// grew (a figure is never shown going back). A failure to store it is
// logged: the figure is shown, not needed.
func (w *watchedGeneration) Running(ctx context.Context, percent int) {
	if percent <= w.g.Progress {
		return
	}
	if err := w.s.Store.SetGenerationProgress(ctx, w.g.UUID, percent); err != nil {
		w.log.WarnContext(ctx, "could not store the provider's progress", "progress", percent, "error", err)
	}
}

func (w *watchedGeneration) Failed(ctx context.Context, reason string) error {
	return w.s.finish(ctx, w.log, w.g, domain.Outcome{Status: domain.StatusFailed, Error: reason})
}

// Finishing claims the record as finishing before the first byte is
// copied, in one conditional write that a cancel's cannot pass: either the
// cancel won (the credits went back) and nothing is ever copied, or from
// here the generation ends completed and charged, or failed with whatever
// was copied deleted (settle).
func (w *watchedGeneration) Finishing(ctx context.Context) (bool, error) {
	s, g := w.s, w.g
	if err := s.Store.ClaimGenerationFinish(ctx, g.UUID, s.now()); err != nil {
		if !errors.Is(err, domain.ErrConflict) {
			return false, fmt.Errorf("claim %s as finishing: %w", g.UUID, err)
		}
		ended, rerr := s.Store.GetGeneration(ctx, g.UUID)
		if rerr != nil {
			return false, fmt.Errorf("reread %s: %w", g.UUID, rerr)
		}
		w.log.InfoContext(ctx, "the generation ended before its outputs were copied; nothing is copied", "status", ended.Status)
		return false, s.settleAndNotify(ctx, w.log, ended)
	}
	w.g.Files.Finishing = true
	return true, nil
}

// Succeeded gives the copied outputs their retention and completes the
// generation, charging its hold.
func (w *watchedGeneration) Succeeded(ctx context.Context, urls []string) error {
	s, g := w.s, w.g
	expires, err := s.keepOutputs(ctx, g)
	if err != nil {
		// Nothing is final yet: the next poll copies and tags again (a
		// failure in a row, as a copy's is).
		return s.engine().Retry(ctx, w.log, w, w.p, err)
	}
	wrote, err := s.finishOnce(ctx, w.log, g, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: urls, OutputExpiresAt: expires})
	if err == nil && !wrote {
		// Another delivery ended the record while this one copied (this
		// one's lease ran out): the objects it just wrote are deleted
		// unless they are that delivery's completed outputs.
		err = s.dropLateCopy(ctx, w.log, g.UUID)
	}
	return err
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

// runOf is where a generation's jobs run.
func (s *Service) runOf(g domain.Generation) domain.UpstreamRun {
	name := g.Upstream
	if name == "" {
		// Recorded before routing: its first route's upstream.
		if routes := s.Upstreams.Routes(g.Model, g.ModelVersion); len(routes) > 0 {
			name = routes[0].Upstream
		}
	}
	return domain.UpstreamRun{Upstream: name, Model: g.UpstreamModel, Jobs: jobsOf(g)}
}

// provider is the client of the upstream a generation ran on.
func (s *Service) provider(g domain.Generation) (upstream.Provider, error) {
	return s.Upstreams.Provider(s.runOf(g).Upstream)
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

// cancelAll asks the upstream to stop a generation's jobs.
func (s *Service) cancelAll(ctx context.Context, log *slog.Logger, g domain.Generation) {
	s.engine().Cancel(ctx, log, s.runOf(g))
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
	checked := func(ref string) (string, error) { return s.Files.SnapshotURL(ctx, g.UserID, g.UUID, ref) }
	if req, err = s.resolveFiles(req, checked); err != nil {
		if errors.Is(err, domain.ErrInvalid) {
			return s.finish(ctx, log, g, domain.Outcome{Status: domain.StatusFailed, Error: "an input file is no longer usable: " + err.Error()})
		}
		return fmt.Errorf("submit waiting generation: %w", err)
	}
	plans, err := s.Upstreams.Plans(ctx, req.Variant, req.Resolved, req.ImageCount)
	if err != nil {
		if errors.Is(err, upstream.ErrNotStarted) {
			return s.nextAfter(ctx, log, PollMessage{GenerationID: g.UUID, Attempt: next, Waited: next}, slotWait)
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
			s.engine().Cancel(ctx, log, domain.UpstreamRun{Upstream: name, Jobs: []domain.UpstreamJob{job}})
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
	return s.nextAfter(ctx, log, m, s.engine().Delay(m.Attempt-m.Waited))
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

// ErrBadCallback is a provider callback whose signature is missing, wrong
// or stale, or that names no generation of ours.
var ErrBadCallback = errors.New("the callback's signature is missing, wrong or stale")

func (s *Service) enqueue(ctx context.Context, m PollMessage, delay time.Duration) error {
	m.Kind = job.KindGeneration
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
