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
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/job"
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
	// Everything that does not need a file's bytes is checked before any
	// file is copied: a route takes the request, and the balance covers
	// its quote (one read; nothing moves), so a refused create never has
	// the service copy a file (up to 100 MiB) for nothing.
	plans, err := s.plans(ctx, req)
	if err != nil {
		return domain.Generation{}, err
	}
	id := uuid.NewString()
	if hasFiles(req) {
		if err := s.covers(ctx, userID, quote.Credits); err != nil {
			return domain.Generation{}, err
		}
		// Files are copied for the generation and checked (and their
		// copies' GET URLs made) before any credit moves; the plans are
		// made again from the copies' URLs.
		snapshot := func(ref string) (string, error) { return s.Files.Resolve(ctx, userID, id, ref) }
		if req, err = s.resolveFiles(req, snapshot); err != nil {
			return domain.Generation{}, err
		}
		if plans, err = s.plans(ctx, req); err != nil {
			return domain.Generation{}, err
		}
	}
	input, err := json.Marshal(req.Input)
	if err != nil {
		return domain.Generation{}, fmt.Errorf("encode input: %w", err)
	}
	now := s.now()
	g := domain.Generation{
		UUID: id, UserID: userID, Model: req.Variant.Model, ModelVersion: req.Variant.Version,
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

// covers refuses, before a file is copied, a create whose quote the
// account's balance does not cover: the 402 its hold would answer.
func (s *Service) covers(ctx context.Context, userID string, credits decimal.Decimal) error {
	a, err := s.Store.GetAccount(ctx, userID)
	if err != nil {
		return fmt.Errorf("read account %s: %w", userID, err)
	}
	if err := a.Covers(credits); err != nil {
		return fmt.Errorf("hold credits: %w", err)
	}
	return nil
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

// slotWait is the wait before a generation waiting for an upstream slot
// asks again.
const slotWait = time.Second

// start runs a recorded generation through the job engine (job.Engine's
// Start): on the first route that takes it, or waiting in the first
// full route's line (waiting true), when the poller starts it once a slot
// frees. Any other failure fails the generation and releases its hold
// before the error returns. attempt is the poll chain's turn of the
// message it enqueues (the next ask, or the first poll): 0 from the
// create, the next turn from a waiting generation's ask.
func (s *Service) start(ctx context.Context, log *slog.Logger, g *domain.Generation, plans []routing.Plan, attempt int) (waiting bool, err error) {
	e := s.engine()
	st, err := e.Start(ctx, log, generationOwner{s: s, g: g}, plans)
	var f *job.Failure
	switch {
	case errors.As(err, &f):
		return false, s.notStarted(ctx, log, g, f)
	case err != nil:
		s.abandon(ctx, log, *g, "", "the job could not be scheduled")
		return false, err
	case st.WaitingAt != "":
		if err := s.enqueue(ctx, PollMessage{GenerationID: g.UUID, Attempt: attempt, Waited: attempt}, slotWait); err != nil {
			s.abandon(ctx, log, *g, st.WaitingAt, "the job could not be scheduled")
			return false, err
		}
		return true, nil
	}
	run := st.Run
	g.Upstream, g.UpstreamModel, g.UpstreamJobs, g.UpstreamID = run.Upstream, run.Model, run.Jobs, run.Jobs[0].ID
	if err := s.enqueue(ctx, PollMessage{GenerationID: g.UUID, Attempt: attempt, Waited: attempt}, s.byDeadline(*g, e.Delay(0))); err != nil {
		e.Cancel(ctx, log, run)
		s.abandon(ctx, log, *g, run.Upstream, "the job could not be scheduled")
		return false, err
	}
	return false, nil
}

// generationOwner is a generation as the owner of the job being started.
// Its record needs no create mark: a generation recorded with no job is
// one whose create was cut off, which the poll finds (submitWaiting) and
// fails after looking for a job the create may have started (findLost).
type generationOwner struct {
	s *Service
	g *domain.Generation
}

func (o generationOwner) Holder() string                        { return o.g.UUID }
func (o generationOwner) Hook() string                          { return o.s.upstreamWebhook(o.g.UUID) }
func (o generationOwner) Sending(context.Context, string) error { return nil }
func (o generationOwner) Unsent(context.Context)                {}

func (o generationOwner) Record(ctx context.Context, run domain.UpstreamRun) error {
	return o.s.Store.SetUpstreamJobs(ctx, o.g.UUID, run, o.s.now())
}

// notStarted fails a generation whose job did not start, releasing its
// hold and slot, and says why as the caller sees it.
func (s *Service) notStarted(ctx context.Context, log *slog.Logger, g *domain.Generation, f *job.Failure) error {
	switch {
	case f.Recording && errors.Is(f, domain.ErrConflict):
		// Another delivery submitted it (or it ended): that one stands.
		return fmt.Errorf("record upstream job of %s: %w", g.UUID, f)
	case f.Recording:
		s.abandon(ctx, log, *g, f.Slot(), f.Reason)
		return fmt.Errorf("record upstream job of %s: %w", g.UUID, f)
	case f.Unknown:
		s.abandon(ctx, log, *g, f.Slot(), "the upstream's answer to the job was lost; any job it started was canceled and nothing is charged")
		return &UpstreamError{Reason: upstream.Public(f.Upstream, f.Cause), Cause: f.Cause}
	}
	s.abandon(ctx, log, *g, f.Slot(), f.Reason)
	var refused *upstream.Error
	if f.Refused && errors.As(f.Cause, &refused) {
		return &UpstreamError{Refused: true, Upstream: f.Upstream, Reason: refused.Message, Cause: f.Cause}
	}
	return &UpstreamError{Reason: f.Reason, Cause: f.Cause}
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
