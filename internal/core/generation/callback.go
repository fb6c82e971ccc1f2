package generation

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Callbacks take the providers' completion calls: the upstream webhook
// route's use case. They verify and queue, and download nothing.
type Callbacks struct{ s *Service }

// NewCallbacks verifies with the upstreams' protocols and queues the job's
// report on queue for the poller.
func NewCallbacks(store Store, upstreams Upstreams, queue Queue, settings Settings) *Callbacks {
	return &Callbacks{s: &Service{Store: store, Upstreams: upstreams, Queue: queue, Settings: settings}}
}

// Callback takes one provider call (see Service.callback).
func (c *Callbacks) Callback(ctx context.Context, generationID string, h http.Header, body []byte) error {
	return c.s.callback(ctx, generationID, h, body)
}

// callback verifies a provider's callback for a generation with the
// protocol of the upstream the generation runs on (Replicate's signing
// secret, fal's ED25519 keys) and, when the job is final, queues the poll
// that acts on the report (see report). It never downloads an output.
func (s *Service) callback(ctx context.Context, generationID string, h http.Header, body []byte) error {
	g, err := s.Store.GetGeneration(ctx, generationID)
	if errors.Is(err, domain.ErrNotFound) {
		return ErrBadCallback // no key to check it with: refused like a forgery
	}
	if err != nil {
		return fmt.Errorf("upstream callback for %s: %w", generationID, err)
	}
	p, err := s.provider(g)
	if err != nil {
		return fmt.Errorf("upstream callback for %s: %w", generationID, err)
	}
	if err := p.VerifyWebhook(ctx, h, body, s.now()); err != nil {
		var ue *upstream.Error
		if errors.As(err, &ue) || errors.Is(err, upstream.ErrMalformed) {
			// The keys could not be read: the provider should retry.
			return fmt.Errorf("upstream callback for %s: verify: %w", generationID, err)
		}
		s.log().WarnContext(ctx, "upstream callback refused", "generation_id", generationID, "reason", err.Error())
		return ErrBadCallback
	}
	r, err := p.DecodeWebhook(body)
	if err != nil {
		return fmt.Errorf("%w: %v", domain.ErrInvalid, err)
	}
	if !r.Final() {
		return nil
	}
	return s.report(ctx, g, r)
}
