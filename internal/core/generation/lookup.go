package generation

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// GenerationReader is what looking generations up needs from the store.
type GenerationReader interface {
	GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
	GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error)
	ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error)
}

// SlotLine tells a waiting holder's place in an upstream's line.
type SlotLine interface {
	SlotQueuePosition(ctx context.Context, provider, holder string) (int, error)
}

// RouteLimits are the routes of each variant and each upstream's cap.
type RouteLimits interface {
	Routes(model, version string) []routing.Route
	Limit(name string) int
}

// Reader looks generations up: the status and list routes' use case. It
// reads the store, and the slots' lines for a waiting generation's place;
// no upstream client, queue or bucket.
type Reader struct {
	store  GenerationReader
	slots  SlotLine
	routes RouteLimits
}

// NewReader reads from store; slots may be nil (no caps, so no lines).
func NewReader(store GenerationReader, slots SlotLine, routes RouteLimits) *Reader {
	return &Reader{store: store, slots: slots, routes: routes}
}

// reader is the poller's own Reader.
func (s *Service) reader() *Reader {
	r := &Reader{store: s.Store, routes: s.Upstreams}
	if s.Slots != nil {
		r.slots = s.Slots
	}
	return r
}

// QueuePosition is a waiting generation's place in the line of its first
// route's upstream (from 1); 0 when it is not waiting.
func (r *Reader) QueuePosition(ctx context.Context, g domain.Generation) (int, error) {
	if r.slots == nil || r.routes == nil || g.Status != domain.StatusProcessing || g.UpstreamID != "" {
		return 0, nil
	}
	for _, name := range routeUpstreams(r.routes, g) {
		if r.routes.Limit(name) <= 0 {
			continue
		}
		if n, err := r.slots.SlotQueuePosition(ctx, name, g.UUID); err != nil || n > 0 {
			return n, err
		}
	}
	return 0, nil
}

// routeUpstreams names the upstreams of a generation's routes, in order.
func routeUpstreams(routes RouteLimits, g domain.Generation) []string {
	var out []string
	for _, r := range routes.Routes(g.Model, g.ModelVersion) {
		if !slices.Contains(out, r.Upstream) {
			out = append(out, r.Upstream)
		}
	}
	return out
}

// Lookup finds a caller's generation by its UUID or its integer id. Another
// owner's generation is not found, exactly like a missing one.
func (r *Reader) Lookup(ctx context.Context, userID, id string) (domain.Generation, error) {
	var (
		g   domain.Generation
		err error
	)
	if _, perr := uuid.Parse(id); perr == nil && len(id) == 36 {
		g, err = r.store.GetGeneration(ctx, strings.ToLower(id))
	} else if n, perr := strconv.ParseInt(id, 10, 64); perr == nil && n > 0 && strconv.FormatInt(n, 10) == id {
		g, err = r.store.GetGenerationByID(ctx, userID, n)
	} else {
		return domain.Generation{}, fmt.Errorf("%w: generation id %q is neither a UUID nor a positive integer", domain.ErrInvalid, truncateID(id))
	}
	if err != nil {
		return domain.Generation{}, err
	}
	if err := g.Work().OwnedBy(userID); err != nil {
		return domain.Generation{}, err
	}
	return g, nil
}

func truncateID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

// List pages through a caller's generations, newest first.
func (r *Reader) List(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	return r.store.ListGenerations(ctx, q)
}
