package generation

import (
	"context"
	"fmt"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Canceler stops generations: the cancel route's use case.
type Canceler struct{ s *Service }

// NewCanceler cancels the upstream jobs, ends the record, frees the slot,
// releases the hold and sends the webhook; slots and notifier may be nil.
func NewCanceler(store Store, upstreams Upstreams, slots Slots, notifier Notifier, settings Settings) *Canceler {
	return &Canceler{s: &Service{Store: store, Upstreams: upstreams, Slots: slots, Notifier: notifier, Settings: settings}}
}

// Cancel stops a caller's generation (see Service.cancel).
func (c *Canceler) Cancel(ctx context.Context, userID, id string) (domain.Generation, error) {
	return c.s.cancel(ctx, userID, id)
}

// cancel stops a caller's generation: the upstream jobs are canceled, the
// record ends canceled and the hold is released. A generation already
// final is a conflict, and so is one whose outputs are being stored
// (domain.ErrFinishing): a cancel never undoes work whose outputs exist.
func (s *Service) cancel(ctx context.Context, userID, id string) (domain.Generation, error) {
	g, err := s.reader().Lookup(ctx, userID, id)
	if err != nil {
		return domain.Generation{}, err
	}
	if err := g.Work().Cancelable(); err != nil {
		return domain.Generation{}, err
	}
	log := s.log().With("user_id", g.UserID, "generation_id", g.UUID, "upstream", g.Upstream, "upstream_id", g.UpstreamID)
	// The record is made final first: the provider's callback for the
	// canceled job, which can arrive before the cancel call returns, then
	// finds it canceled instead of failing it. Only the call whose write
	// made it final answers the cancel; one that lost the race (to another
	// cancel, the poller or the callback) is a conflict.
	wrote, err := s.finishOnce(ctx, log, g, domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"})
	if err != nil {
		return domain.Generation{}, err
	}
	if wrote {
		s.cancelAll(ctx, log, g)
	}
	uuid := g.UUID
	if g, err = s.Store.GetGeneration(ctx, uuid); err != nil {
		return domain.Generation{}, fmt.Errorf("reread %s: %w", uuid, err)
	}
	if !wrote {
		return domain.Generation{}, g.Work().Cancelable()
	}
	return g, nil
}
