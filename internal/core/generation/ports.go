package generation

import (
	"context"
	"errors"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// Store is what the use cases need from the store.
type Store interface {
	Hold(ctx context.Context, userID string, h domain.Hold) error
	Capture(ctx context.Context, userID, workID string) (bool, error)
	Release(ctx context.Context, userID, workID string) (bool, error)
	Refund(ctx context.Context, userID, workID string) (bool, error)
	CreateGeneration(ctx context.Context, g *domain.Generation) error
	GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
	GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error)
	SetUpstreamJobs(ctx context.Context, uuid string, run domain.UpstreamRun, at time.Time) error
	FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error
	ClaimGenerationFinish(ctx context.Context, uuid string, at time.Time) error
	SetGenerationProgress(ctx context.Context, uuid string, progress int) error
	ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error)
	ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (claimed bool, holder int, err error)
	// GetAccount gives the retention a completed generation's outputs
	// are kept for.
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
}

// Upstreams are the routes of each variant and the clients of their
// upstreams (*upstream.Router).
type Upstreams interface {
	Plans(ctx context.Context, v catalog.Variant, resolved map[string]any, imageCount int) ([]routing.Plan, error)
	Routes(model, version string) []routing.Route
	Provider(name string) (upstream.Provider, error)
	// Limit is an upstream's cap on jobs at once; 0 is none.
	Limit(name string) int
}

// Queue delays poll messages.
type Queue interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

// Slots caps the jobs running at once at each upstream, keyed by the
// routing file's upstream name.
type Slots interface {
	AcquireSlot(ctx context.Context, provider, holder string, limit int, at time.Time) (bool, error)
	ReleaseSlot(ctx context.Context, provider, holder string) error
	SlotQueuePosition(ctx context.Context, provider, holder string) (int, error)
}

// Notifier enqueues a webhook event; nil means no webhooks.
type Notifier interface {
	Notify(ctx context.Context, kind domain.WorkKind, id, event string) error
}

// ScenePolls polls the long-form scenes' jobs: the poll queue's messages
// of kind job.KindScene. A scene's job runs on the same engine
// (job.Engine) as a generation's, and ends through the scene's completion
// hook (its clip recorded, the waiting workflow task resumed).
type ScenePolls interface {
	HandleScenePoll(ctx context.Context, body []byte) error
}

// OutputFiles is the bucket as the poller sees it beside the copier.
type OutputFiles interface {
	media.Retainer
	// Delete deletes keys; a key already gone is not an error.
	Delete(ctx context.Context, keys []string) error
}

// Copier keeps the service's own copy of an output and returns its URL.
type Copier interface {
	Copy(ctx context.Context, src, keyBase string, kind domain.MediaKind) (string, error)
}

// ErrUpstreamUnavailable is a submission no upstream accepted, or whose
// outcome was lost; the hold is released and the generation failed before
// the caller hears of it.
var ErrUpstreamUnavailable = errors.New("upstream provider unavailable")

// ErrUpstreamRefused is a submission the upstream refused for good (a 4xx
// such as 422 about the input): it is not tried elsewhere; the hold is
// released and the generation failed with the provider's reason.
var ErrUpstreamRefused = errors.New("upstream provider refused the job")

// UpstreamError is a job no upstream took. It matches ErrUpstreamRefused
// (Refused: the provider's final word on the input) or else
// ErrUpstreamUnavailable under errors.Is. Upstream and Reason are for the
// caller and the record (a refusal's message once, or upstream.Public);
// Cause, which may name addresses, is for the logs.
type UpstreamError struct {
	Refused bool
	// Upstream names the routing file's upstream that refused.
	Upstream string
	// Reason is the provider's message when Refused, else what happened.
	Reason string
	Cause  error
}

func (e *UpstreamError) sentinel() error {
	if e.Refused {
		return ErrUpstreamRefused
	}
	return ErrUpstreamUnavailable
}

func (e *UpstreamError) Error() string {
	msg := e.sentinel().Error() + ": " + e.Reason
	if e.Cause != nil {
		msg += " (" + e.Cause.Error() + ")"
	}
	return msg
}

func (e *UpstreamError) Is(target error) bool { return target == e.sentinel() }
