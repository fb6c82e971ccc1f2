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

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/pricing"
)

// enqueueAttempts bounds the tries to enqueue the first poll.
const enqueueAttempts = 3

// Create validates and prices a generate request, holds its credits, records
// it, submits it upstream and enqueues its first poll. On any failure after
// the hold, the hold is released and the record (if written) is failed, so
// nothing is left half-made.
func (s *Service) Create(ctx context.Context, userID string, body []byte) (domain.Generation, error) {
	req, quote, err := s.Estimate(body)
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
	log := s.log().With("user_id", userID, "generation_id", g.UUID, "model_version", g.ModelVersion)

	if err := s.Store.Hold(ctx, userID, domain.Hold{WorkID: g.UUID, Kind: domain.WorkGeneration, Amount: quote.Credits, CreatedAt: now}); err != nil {
		return domain.Generation{}, fmt.Errorf("hold credits for %s: %w", g.UUID, err)
	}
	if err := s.Store.CreateGeneration(ctx, &g); err != nil {
		// The write may have landed although its answer was lost: fail the
		// record too, or nothing would ever look at it again.
		s.abandon(ctx, log, g, "the generation could not be recorded")
		return domain.Generation{}, fmt.Errorf("record generation: %w", err)
	}
	got, err := s.acquireSlot(ctx, g, now)
	if err != nil {
		s.abandon(ctx, log, g, "the job could not be scheduled")
		return domain.Generation{}, err
	}
	if !got {
		// The provider is at its cap: the job waits in the queue, and the
		// poller submits it when a slot frees.
		if err := s.enqueue(ctx, PollMessage{GenerationID: g.UUID}, SlotWait); err != nil {
			s.abandon(ctx, log, g, "the job could not be scheduled")
			return domain.Generation{}, err
		}
		log.InfoContext(ctx, "generation waits for a provider slot", "credits", domain.FormatCredits(quote.Credits))
		return g, nil
	}
	if err := s.submit(ctx, log, &g, req); err != nil {
		return domain.Generation{}, err
	}
	log.InfoContext(ctx, "generation created", "upstream_id", g.UpstreamID, "credits", domain.FormatCredits(quote.Credits))
	return g, nil
}

// SlotWait is the wait before a generation waiting for a provider slot
// asks again.
const SlotWait = time.Second

// acquireSlot takes a slot of the generation's provider; without a cap it
// always has one.
func (s *Service) acquireSlot(ctx context.Context, g domain.Generation, at time.Time) (bool, error) {
	limit := s.Limits.Of(g.Model)
	if s.Slots == nil || limit <= 0 {
		return true, nil
	}
	got, err := s.Slots.AcquireSlot(ctx, g.Model, g.UUID, limit, at)
	if err != nil {
		return false, fmt.Errorf("provider slot for %s: %w", g.UUID, err)
	}
	return got, nil
}

// releaseSlot frees the generation's slot (or place in line), if caps apply.
func (s *Service) releaseSlot(ctx context.Context, log *slog.Logger, g domain.Generation) {
	if s.Slots == nil || s.Limits.Of(g.Model) <= 0 {
		return
	}
	if err := s.Slots.ReleaseSlot(ctx, g.Model, g.UUID); err != nil {
		log.WarnContext(ctx, "could not release the provider slot", "error", err)
	}
}

// QueuePosition is a waiting generation's place in its provider's line
// (from 1); 0 when it is not waiting.
func (s *Service) QueuePosition(ctx context.Context, g domain.Generation) (int, error) {
	if s.Slots == nil || g.Status != domain.StatusProcessing || g.UpstreamID != "" || s.Limits.Of(g.Model) <= 0 {
		return 0, nil
	}
	return s.Slots.SlotQueuePosition(ctx, g.Model, g.UUID)
}

// submit sends a generation that holds a slot to the provider, records the
// job and schedules its first poll. On failure the generation is failed and
// its credits and slot released before the error returns.
func (s *Service) submit(ctx context.Context, log *slog.Logger, g *domain.Generation, req catalog.Request) error {
	p, err := s.Upstream.Create(ctx, req.Variant.UpstreamModel, upstreamInput(req), s.upstreamWebhook(g.UUID))
	if err != nil {
		log.WarnContext(ctx, "upstream submission failed", "error", err)
		s.abandon(ctx, log, *g, "upstream provider did not accept the job")
		return fmt.Errorf("%w: %v", ErrUpstreamUnavailable, err)
	}
	if err := s.Store.SetUpstreamID(ctx, g.UUID, p.ID, s.now()); err != nil {
		s.cancelUpstream(ctx, log, p.ID)
		if errors.Is(err, domain.ErrConflict) {
			// Another delivery submitted it (or it ended): that one stands.
			return fmt.Errorf("record upstream job of %s: %w", g.UUID, err)
		}
		s.abandon(ctx, log, *g, "the job could not be recorded")
		return fmt.Errorf("record upstream job of %s: %w", g.UUID, err)
	}
	g.UpstreamID = p.ID
	if err := s.enqueue(ctx, PollMessage{GenerationID: g.UUID}, s.pollDelay(0)); err != nil {
		s.cancelUpstream(ctx, log, p.ID)
		s.abandon(ctx, log, *g, "the job could not be scheduled")
		return err
	}
	return nil
}

// requestOf rebuilds a recorded generation's validated request, to submit
// one that waited for a slot.
func (s *Service) requestOf(g domain.Generation) (catalog.Request, error) {
	body, err := json.Marshal(map[string]any{"model": g.Model, "model_version": g.ModelVersion,
		"input": g.Input, "image_count": g.ImageCount})
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

// Estimate validates and prices a generate request without holding,
// recording or submitting anything.
func (s *Service) Estimate(body []byte) (catalog.Request, pricing.Quote, error) {
	req, err := catalog.ParseGenerate(body, s.Validation)
	if err != nil {
		return catalog.Request{}, pricing.Quote{}, err
	}
	quote, err := s.Prices.Quote(req)
	if err != nil {
		return catalog.Request{}, pricing.Quote{}, fmt.Errorf("price %s: %w", req.Variant.Version, err)
	}
	return req, quote, nil
}

// upstreamInput is what the provider receives: the input with defaults, and
// for image variants the number of images.
func upstreamInput(req catalog.Request) map[string]any {
	in := make(map[string]any, len(req.Resolved)+1)
	for k, v := range req.Resolved {
		in[k] = v
	}
	if req.Variant.Kind == domain.MediaImage {
		if _, ok := req.Variant.Field("num_images"); !ok {
			in["num_outputs"] = req.ImageCount
		}
	}
	return in
}

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

// abandon fails a generation that never got going and releases its hold.
func (s *Service) abandon(ctx context.Context, log *slog.Logger, g domain.Generation, reason string) {
	err := s.Store.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: domain.StatusFailed, Error: reason}, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
		// The hold stays open, so the sweeper finds it, fails the record at
		// its deadline and releases the hold then.
		log.WarnContext(ctx, "could not fail abandoned generation; the sweeper will", "error", err)
		return
	}
	s.releaseSlot(ctx, log, g)
	s.release(ctx, log, g.UserID, g.UUID)
}

func (s *Service) release(ctx context.Context, log *slog.Logger, userID, workID string) {
	if _, err := s.Store.Release(ctx, userID, workID); err != nil {
		// The sweeper releases it after its grace period.
		log.WarnContext(ctx, "could not release hold", "work_id", workID, "error", err)
	}
}

func (s *Service) cancelUpstream(ctx context.Context, log *slog.Logger, upstreamID string) {
	if _, err := s.Upstream.Cancel(ctx, upstreamID); err != nil {
		log.WarnContext(ctx, "could not cancel upstream job", "upstream_id", upstreamID, "error", err)
	}
}
