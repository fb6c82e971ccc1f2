package generation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// Creator starts generations: the generate route's use case.
type Creator struct{ s *Service }

// NewCreator validates, prices, holds, records, submits and enqueues the
// first poll; slots may be nil (no caps), inputs too (every input stays
// in its record).
func NewCreator(store Store, upstreams Upstreams, queue Queue, slots Slots, inputs InputObjects, prices *pricing.Table, settings Settings) *Creator {
	return &Creator{s: &Service{Store: store, Upstreams: upstreams, Queue: queue, Slots: slots, Inputs: inputs, Prices: prices, Settings: settings}}
}

// Create starts a generation (see Service.create).
func (c *Creator) Create(ctx context.Context, userID string, body []byte) (domain.Generation, error) {
	return c.s.create(ctx, userID, body)
}

// enqueueAttempts bounds the tries to enqueue the first poll.
const enqueueAttempts = 3

// create validates and prices a generate request, maps it onto its
// variant's routes (a value no route can type is a 400 before any credit
// moves), holds its credits, records it, submits it upstream and enqueues
// its first poll. On any failure after the hold, the hold is released and
// the record (if written) is failed, so nothing is left half-made.
func (s *Service) create(ctx context.Context, userID string, body []byte) (domain.Generation, error) {
	req, quote, err := NewEstimator(s.Prices, s.Validation).Estimate(body)
	if err != nil {
		return domain.Generation{}, err
	}
	// Files are checked (and their GET URLs made) before any credit moves.
	if req, err = s.resolveFiles(ctx, userID, req); err != nil {
		return domain.Generation{}, err
	}
	plans, err := s.plans(ctx, req)
	if err != nil {
		return domain.Generation{}, err
	}
	input, err := json.Marshal(req.Input)
	if err != nil {
		return domain.Generation{}, fmt.Errorf("encode input: %w", err)
	}
	now := s.now()
	g := domain.Generation{
		UUID: uuid.NewString(), UserID: userID, Model: req.Variant.Model, ModelVersion: req.Variant.Version,
		Kind: req.Variant.Kind, Input: input, ImageCount: req.ImageCount, Status: domain.StatusProcessing,
		CreditsUsed: quote.Credits, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(s.deadline(req.Variant.Kind)),
		Webhook: req.Webhook,
	}
	if req.Deadline > 0 {
		g.CancelAt = now.Add(req.Deadline)
	}
	log := s.log().With("user_id", userID, "generation_id", g.UUID, "model_version", g.ModelVersion)

	if err := s.Store.Hold(ctx, userID, domain.NewHold(ctx, g.UUID, domain.WorkGeneration, quote.Credits, now, g.ModelVersion)); err != nil {
		return domain.Generation{}, fmt.Errorf("hold credits for %s: %w", g.UUID, err)
	}
	// An input too large for its record is written to the bucket first,
	// once the credits are held (a refused hold leaves nothing), and the
	// record keeps it elided; the answer and the upstream get it whole.
	rec := g
	if rec.Input, rec.InputObject, err = recordInput(ctx, s.Inputs, g.UUID, input, req.Input); err != nil {
		s.abandon(ctx, log, g, "", "the input could not be stored")
		return domain.Generation{}, fmt.Errorf("record generation: %w", err)
	}
	if err := s.Store.CreateGeneration(ctx, &rec); err != nil {
		// The write may have landed although its answer was lost: fail the
		// record too, or nothing would ever look at it again.
		s.abandon(ctx, log, g, "", "the generation could not be recorded")
		return domain.Generation{}, fmt.Errorf("record generation: %w", err)
	}
	g.ID, g.InputObject = rec.ID, rec.InputObject
	waiting, err := s.start(ctx, log, &g, plans, 0)
	if err != nil {
		return domain.Generation{}, &domain.RecordedWorkError{Kind: domain.WorkGeneration, ID: g.UUID, Err: err}
	}
	if waiting {
		log.InfoContext(ctx, "generation waits for an upstream slot", "credits", domain.FormatCredits(quote.Credits))
		return g, nil
	}
	log.InfoContext(ctx, "generation created", "upstream", g.Upstream, "upstream_id", g.UpstreamID, "credits", domain.FormatCredits(quote.Credits))
	return g, nil
}

// plans maps a request onto its routes. A value a route cannot type is
// the caller's 400; no usable route is the provider's 502.
func (s *Service) plans(ctx context.Context, req catalog.Request) ([]routing.Plan, error) {
	plans, err := s.Upstreams.Plans(ctx, req.Variant, req.Resolved, req.ImageCount)
	var conv *routing.ConvertError
	switch {
	case errors.As(err, &conv):
		return nil, fmt.Errorf("%w: %v", domain.ErrInvalid, conv)
	case err != nil:
		return nil, &UpstreamError{Reason: upstream.Public("", err), Cause: err}
	}
	return plans, nil
}

// SlotWait is the wait before a generation waiting for an upstream slot
// asks again.
const SlotWait = time.Second

// start runs a recorded generation on the first route that takes it: one
// whose upstream has a free slot and that certainly started nothing when
// it refused. When every route's upstream is at its cap, the generation
// waits in the first one's line (waiting true) and the poller starts it
// when a slot frees. Any other failure fails the generation and releases
// its hold before the error returns. attempt is the poll chain's turn of
// the message it enqueues (the next ask, or the first poll): 0 from the
// create, the next turn from a waiting generation's ask.
func (s *Service) start(ctx context.Context, log *slog.Logger, g *domain.Generation, plans []routing.Plan, attempt int) (waiting bool, err error) {
	var lastErr error
	lastName := ""
	capped := -1
	for i, plan := range plans {
		name := plan.Route.Upstream
		got, err := s.acquireSlot(ctx, name, g.UUID)
		if err != nil {
			s.abandon(ctx, log, *g, "", "the job could not be scheduled")
			return false, err
		}
		if !got {
			if capped < 0 {
				capped = i
			} else {
				s.releaseSlot(ctx, log, name, g.UUID) // wait only in the first line
			}
			continue
		}
		if capped >= 0 {
			s.releaseSlot(ctx, log, plans[capped].Route.Upstream, g.UUID)
			capped = -1 // took a slot of a later route: leave the line
		}
		err = s.submit(ctx, log, g, plan, attempt)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, upstream.ErrNotStarted) {
			return false, err // the generation is failed and settled
		}
		log.WarnContext(ctx, "upstream started nothing; trying the next route", "upstream", name, "error", err)
		s.releaseSlot(ctx, log, name, g.UUID)
		lastErr, lastName = err, name
	}
	if capped >= 0 {
		if err := s.enqueue(ctx, PollMessage{GenerationID: g.UUID, Attempt: attempt, Waited: attempt}, SlotWait); err != nil {
			s.abandon(ctx, log, *g, plans[capped].Route.Upstream, "the job could not be scheduled")
			return false, err
		}
		return true, nil
	}
	reason := "no upstream accepted the job"
	if lastErr != nil {
		reason = upstream.Public(lastName, lastErr)
	}
	s.abandon(ctx, log, *g, "", reason)
	return false, &UpstreamError{Reason: reason, Cause: lastErr}
}

// acquireSlot takes a slot of an upstream; without a cap it always has one.
func (s *Service) acquireSlot(ctx context.Context, name, holder string) (bool, error) {
	limit := s.Upstreams.Limit(name)
	if s.Slots == nil || limit <= 0 {
		return true, nil
	}
	got, err := s.Slots.AcquireSlot(ctx, name, holder, limit, s.now())
	if err != nil {
		return false, fmt.Errorf("upstream slot for %s: %w", holder, err)
	}
	return got, nil
}

// releaseSlot frees the holder's slot (or place in line), if caps apply.
func (s *Service) releaseSlot(ctx context.Context, log *slog.Logger, name, holder string) {
	if name == "" || s.Slots == nil || s.Upstreams == nil || s.Upstreams.Limit(name) <= 0 {
		return
	}
	if err := s.Slots.ReleaseSlot(ctx, name, holder); err != nil {
		log.WarnContext(ctx, "could not release the upstream slot", "upstream", name, "error", err)
	}
}

// submit sends a generation that holds a slot of plan's upstream: one job,
// or one per image. It records the jobs and schedules the first poll. An
// error wrapping upstream.ErrNotStarted left nothing behind, and the caller
// may try the next route; on any other error the generation is failed and
// its credits and slot released before the error returns.
func (s *Service) submit(ctx context.Context, log *slog.Logger, g *domain.Generation, plan routing.Plan, attempt int) error {
	name := plan.Route.Upstream
	log = log.With("upstream", name, "upstream_model", plan.Route.Model)
	p, err := s.Upstreams.Provider(name)
	if err != nil {
		s.abandon(ctx, log, *g, name, "the route names an unknown upstream")
		return err
	}
	run := domain.UpstreamRun{Upstream: name, Model: plan.Route.Model}
	hook := s.upstreamWebhook(g.UUID)
	since := s.now()
	for i := 0; i < plan.Jobs; i++ {
		job, err := p.Submit(ctx, plan.Route.Model, plan.Input, hook)
		if err == nil {
			run.Jobs = append(run.Jobs, job)
			continue
		}
		var unknown *upstream.UnknownOutcomeError
		var refused *upstream.Error
		switch {
		case errors.Is(err, upstream.ErrNotStarted) && i == 0:
			return err
		case errors.As(err, &unknown):
			s.resolveUnknown(ctx, log, p, g, run, since, err)
			return &UpstreamError{Reason: upstream.Public(name, err), Cause: err}
		case errors.As(err, &refused) && refused.StatusCode < 500:
			s.cancelJobs(ctx, log, p, run.Jobs)
			s.abandon(ctx, log, *g, name, "upstream "+name+" refused the job: "+refused.Message)
			return &UpstreamError{Refused: true, Upstream: name, Reason: refused.Message, Cause: err}
		default:
			s.cancelJobs(ctx, log, p, run.Jobs)
			reason := upstream.Public(name, err)
			s.abandon(ctx, log, *g, name, reason)
			return &UpstreamError{Reason: reason, Cause: err}
		}
	}
	if err := s.Store.SetUpstreamJobs(ctx, g.UUID, run, s.now()); err != nil {
		s.cancelJobs(ctx, log, p, run.Jobs)
		if errors.Is(err, domain.ErrConflict) {
			// Another delivery submitted it (or it ended): that one stands.
			return fmt.Errorf("record upstream job of %s: %w", g.UUID, err)
		}
		s.abandon(ctx, log, *g, name, "the job could not be recorded")
		return fmt.Errorf("record upstream job of %s: %w", g.UUID, err)
	}
	g.Upstream, g.UpstreamModel, g.UpstreamJobs, g.UpstreamID = run.Upstream, run.Model, run.Jobs, run.Jobs[0].ID
	if err := s.enqueue(ctx, PollMessage{GenerationID: g.UUID, Attempt: attempt, Waited: attempt}, s.pollDelay(0)); err != nil {
		s.cancelJobs(ctx, log, p, run.Jobs)
		s.abandon(ctx, log, *g, name, "the job could not be scheduled")
		return err
	}
	return nil
}

// resolveUnknown handles a create whose outcome is unknown: it may have
// started a paid job, so it is never sent again. The job is looked for
// among the upstream's recent ones (by the generation id its callback URL
// carries) and canceled with the jobs made before it; the generation fails,
// its hold is released, and the operator is told.
func (s *Service) resolveUnknown(ctx context.Context, log *slog.Logger, p upstream.Provider, g *domain.Generation, run domain.UpstreamRun, since time.Time, cause error) {
	found, ok, err := domain.UpstreamJob{}, false, error(nil)
	if s.UpstreamWebhook != "" {
		found, ok, err = p.FindJob(ctx, g.UUID, since)
	}
	if ok {
		run.Jobs = append(run.Jobs, found)
	}
	s.cancelJobs(ctx, log, p, run.Jobs)
	s.abandon(ctx, log, *g, run.Upstream, "the upstream's answer to the job was lost; any job it started was canceled and nothing is charged")
	log.ErrorContext(ctx, "upstream create outcome unknown", "alert", "operator", "cause", cause.Error(),
		"found_job", found.ID, "lookup_error", errString(err), "canceled_jobs", len(run.Jobs),
		"action", "check the upstream's dashboard for a job of this generation that is still running or was billed")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// cancelJobs asks the upstream to stop jobs; failures are logged.
func (s *Service) cancelJobs(ctx context.Context, log *slog.Logger, p upstream.Provider, jobs []domain.UpstreamJob) {
	for _, j := range jobs {
		if err := p.Cancel(ctx, j); err != nil {
			log.WarnContext(ctx, "could not cancel upstream job", "upstream_id", j.ID, "error", err)
		}
	}
}

// requestOf rebuilds a recorded generation's validated request from its
// whole input (wholeInput), to submit one that waited for a slot.
func (s *Service) requestOf(g domain.Generation, input json.RawMessage) (catalog.Request, error) {
	body, err := json.Marshal(map[string]any{"model": g.Model, "model_version": g.ModelVersion,
		"input": input, "image_count": g.ImageCount})
	if err != nil {
		return catalog.Request{}, err
	}
	opts := s.Validation
	opts.AllowLoopbackURLs = true // validated when it was accepted; hosts are not checked again
	return catalog.ParseGenerate(body, opts)
}

// upstreamWebhook is the callback URL of one generation ("" for none).
func (s *Service) upstreamWebhook(generationID string) string {
	if s.UpstreamWebhook == "" {
		return ""
	}
	return s.UpstreamWebhook + "?" + url.Values{"generation": {generationID}}.Encode()
}
