package generation

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// QueuePosition is a waiting generation's place in the line of its first
// route's upstream (from 1); 0 when it is not waiting.
func (s *Service) QueuePosition(ctx context.Context, g domain.Generation) (int, error) {
	if s.Slots == nil || s.Upstreams == nil || g.Status != domain.StatusProcessing || g.UpstreamID != "" {
		return 0, nil
	}
	for _, name := range s.routeUpstreams(g) {
		if s.Upstreams.Limit(name) <= 0 {
			continue
		}
		if n, err := s.Slots.SlotQueuePosition(ctx, name, g.UUID); err != nil || n > 0 {
			return n, err
		}
	}
	return 0, nil
}

// routeUpstreams names the upstreams of a generation's routes, in order.
func (s *Service) routeUpstreams(g domain.Generation) []string {
	var out []string
	for _, r := range s.Upstreams.Routes(g.Model, g.ModelVersion) {
		if !slices.Contains(out, r.Upstream) {
			out = append(out, r.Upstream)
		}
	}
	return out
}

// Lookup finds a caller's generation by its UUID or its integer id. Another
// owner's generation is not found, exactly like a missing one.
func (s *Service) Lookup(ctx context.Context, userID, id string) (domain.Generation, error) {
	var (
		g   domain.Generation
		err error
	)
	if _, perr := uuid.Parse(id); perr == nil && len(id) == 36 {
		g, err = s.Store.GetGeneration(ctx, strings.ToLower(id))
	} else if n, perr := strconv.ParseInt(id, 10, 64); perr == nil && n > 0 && strconv.FormatInt(n, 10) == id {
		g, err = s.Store.GetGenerationByID(ctx, userID, n)
	} else {
		return domain.Generation{}, fmt.Errorf("%w: generation id %q is neither a UUID nor a positive integer", domain.ErrInvalid, truncateID(id))
	}
	if err != nil {
		return domain.Generation{}, err
	}
	if g.UserID != userID {
		return domain.Generation{}, fmt.Errorf("generation %s: %w", id, domain.ErrNotFound)
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
func (s *Service) List(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	return s.Store.ListGenerations(ctx, q)
}
