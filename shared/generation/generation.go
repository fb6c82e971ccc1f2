// Package generation holds the single-generation use cases: create (validate,
// price, hold, record, submit, enqueue), look up, and poll the upstream job
// to its end (copy outputs, finish the record, settle the hold).
package generation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/pricing"
	"github.com/mediagen-dev/mediagen/shared/routing"
	"github.com/mediagen-dev/mediagen/shared/store"
	"github.com/mediagen-dev/mediagen/shared/upstream"
)

// Store is what the use cases need from the store.
type Store interface {
	Hold(ctx context.Context, userID string, h domain.Hold) error
	Capture(ctx context.Context, userID, workID string) (bool, error)
	Release(ctx context.Context, userID, workID string) (bool, error)
	CreateGeneration(ctx context.Context, g *domain.Generation) error
	GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
	GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error)
	SetUpstreamJobs(ctx context.Context, uuid string, run domain.UpstreamRun, at time.Time) error
	FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error
	ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error)
	ClaimPoll(ctx context.Context, uuid string, attempt int, now, until time.Time) (claimed bool, holder int, err error)
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

// MessageHandler handles the poll queue's messages that are not a
// generation's (the long-form scenes' polls): handled is false for a
// message it does not know.
type MessageHandler interface {
	HandleMessage(ctx context.Context, body string) (handled bool, err error)
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

// Defaults of the tuning knobs.
const (
	DefaultImageDeadline = 10 * time.Minute
	DefaultVideoDeadline = 30 * time.Minute
	DefaultPollInterval  = 2 * time.Second
	MaxPollInterval      = 30 * time.Second
	// MaxConsecutiveErrors bounds the polls in a row that may fail to reach
	// the provider before the generation fails.
	MaxConsecutiveErrors = 5
	// DefaultPollLease is how long one poll holds its generation's poll
	// chain: the poller's Lambda timeout, shorter than the queue's
	// visibility timeout, so a redelivery after a crash takes over.
	DefaultPollLease = 5 * time.Minute
	// DefaultPollParallelism is how many messages of a batch are polled at
	// once: the poll queue's BatchSize in template.yaml, so a whole batch
	// runs together.
	DefaultPollParallelism = 5
	// DefaultStartMargin is the least time before the Lambda's deadline at
	// which a message is still started: one large output copy (512 MB at
	// about 10 MB/s, provider to S3) plus the record margin. A message not
	// started comes back as a batch item failure and runs again in a fresh
	// invocation, instead of starting a copy it cannot finish.
	DefaultStartMargin = 60 * time.Second
	// DefaultRecordMargin is the time kept after the copies' deadline to
	// write what happened: the outcome, the hold's settlement, the webhook
	// event and the next poll are a few DynamoDB and SQS requests of tens
	// of milliseconds, with room for the SDKs' retries.
	DefaultRecordMargin = 10 * time.Second
)

// Service runs the use cases.
type Service struct {
	Store     Store
	Upstreams Upstreams
	Queue     Queue
	Copier    Copier
	Notifier  Notifier
	// Slots caps the jobs at once per upstream (its max_concurrent); work
	// beyond a cap waits in the queue. Nil Slots means no caps.
	Slots Slots
	// UpstreamWebhook, when set, is the URL the provider calls on
	// completion; the generation's UUID is added as ?generation=, which
	// also finds a job whose create outcome was lost (FindJob).
	UpstreamWebhook string
	Prices          *pricing.Table
	Validation      catalog.Options
	// ImageDeadline and VideoDeadline bound a generation's processing time.
	ImageDeadline, VideoDeadline time.Duration
	// PollInterval is the first delay between polls; it grows by half each
	// poll up to MaxPollInterval.
	PollInterval time.Duration
	// PollLease is how long a poll holds the generation's poll chain
	// (default DefaultPollLease); it must not exceed the queue's visibility
	// timeout.
	PollLease time.Duration
	// PollParallelism bounds the messages of one batch polled at once
	// (default DefaultPollParallelism).
	PollParallelism int
	// StartMargin and RecordMargin bound the poller's work by the Lambda's
	// deadline (ctx.Deadline()): no message starts with less than
	// StartMargin left, and output copies end RecordMargin before it.
	// Without a deadline (the local runtime) they do nothing.
	StartMargin, RecordMargin time.Duration
	// Others takes the queue's other messages; nil: there are none.
	Others MessageHandler
	// Now is the clock; the Lambda's deadline is compared with it too.
	Now func() time.Time
	Log *slog.Logger
}

func (s *Service) now() time.Time { return domain.Now(s.Now) }

func (s *Service) log() *slog.Logger { return domain.Logger(s.Log) }

func (s *Service) deadline(kind domain.MediaKind) time.Duration {
	if kind == domain.MediaImage {
		if s.ImageDeadline > 0 {
			return s.ImageDeadline
		}
		return DefaultImageDeadline
	}
	if s.VideoDeadline > 0 {
		return s.VideoDeadline
	}
	return DefaultVideoDeadline
}

func (s *Service) pollParallelism() int {
	if s.PollParallelism > 0 {
		return s.PollParallelism
	}
	return DefaultPollParallelism
}

func (s *Service) startMargin() time.Duration {
	if s.StartMargin > 0 {
		return s.StartMargin
	}
	return DefaultStartMargin
}

func (s *Service) recordMargin() time.Duration {
	if s.RecordMargin > 0 {
		return s.RecordMargin
	}
	return DefaultRecordMargin
}

// pollDelay is the wait before poll number attempt (0-based).
func (s *Service) pollDelay(attempt int) time.Duration {
	d := s.PollInterval
	if d <= 0 {
		d = DefaultPollInterval
	}
	for i := 0; i < attempt && d < MaxPollInterval; i++ {
		d += d / 2
	}
	if d > MaxPollInterval {
		d = MaxPollInterval
	}
	return d
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
