// Package generation holds the single-generation use cases, a file each:
// create (validate, price, hold, record, submit, enqueue), estimate, look
// up, cancel, poll the upstream job to its end, complete (copy outputs,
// finish the record, settle the hold) and the provider's callback.
package generation

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/clock"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/job"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Defaults of the tuning knobs.
const (
	defaultImageDeadline = 10 * time.Minute
	DefaultVideoDeadline = 30 * time.Minute
	defaultPollInterval  = job.DefaultPollInterval
	MaxPollInterval      = job.MaxPollInterval
	// MaxConsecutiveErrors bounds the polls in a row that may fail to reach
	// the provider before the generation fails.
	MaxConsecutiveErrors = job.MaxConsecutiveErrors
	// DefaultPollLease is how long one poll holds its generation's poll
	// chain: the poller's Lambda timeout, shorter than the queue's
	// visibility timeout, so a redelivery after a crash takes over.
	DefaultPollLease = 5 * time.Minute
	// defaultPollParallelism is how many messages of a batch are polled at
	// once: the poll queue's BatchSize in template.yaml, so a whole batch
	// runs together.
	defaultPollParallelism = 5
	// defaultStartMargin is the least time before the Lambda's deadline at
	// which a message is still started: one large output copy (512 MB at
	// about 10 MB/s, provider to S3) plus the record margin. A message not
	// started comes back as a batch item failure and runs again in a fresh
	// invocation, instead of starting a copy it cannot finish.
	defaultStartMargin = 60 * time.Second
	// defaultRecordMargin is the time kept after the copies' deadline to
	// write what happened: the outcome, the hold's settlement, the webhook
	// event and the next poll are a few DynamoDB and SQS requests of tens
	// of milliseconds, with room for the SDKs' retries.
	defaultRecordMargin = 10 * time.Second
)

// Settings are the knobs of the use cases, each with a default when zero.
type Settings struct {
	// UpstreamWebhook, when set, is the URL the provider calls on
	// completion; the generation's UUID is added as ?generation=, which
	// also finds a job whose create outcome was lost (FindJob).
	UpstreamWebhook string
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
	// (default defaultPollParallelism).
	PollParallelism int
	// StartMargin and RecordMargin bound the poller's work by the Lambda's
	// deadline (ctx.Deadline()): no message starts with less than
	// StartMargin left, and output copies end RecordMargin before it.
	// Without a deadline (the local runtime) they do nothing.
	StartMargin, RecordMargin time.Duration
	// Now is the clock; the Lambda's deadline is compared with it too.
	Now func() time.Time
	// Timers is the clock a Prefer: wait waits on (CreateAndWait); nil is
	// the wall clock.
	Timers clock.Clock
	Log    *slog.Logger
}

// Service is the poller: a poll may submit a waiting generation, complete
// or fail one, cancel its jobs and send its webhook, so it holds every
// port. Each route has a use case of its own that takes only what it uses
// (NewCreator, NewReader, NewCanceler, NewCallbacks, NewEstimator); the
// poller is built by NewPoller.
type Service struct {
	Store     Store
	Upstreams Upstreams
	Queue     Queue
	Copier    Copier
	// Outputs tags the outputs of an account that keeps them for less
	// than the default retention (media.KeepFor), and deletes what was
	// written for a generation that did not end completed; nil: neither
	// can be done (tests without a bucket).
	Outputs OutputFiles
	// Notifier sends webhook events; nil means no webhooks.
	Notifier Notifier
	// Slots caps the jobs at once per upstream (its max_concurrent); work
	// beyond a cap waits in the queue. Nil Slots means no caps.
	Slots  Slots
	Prices *pricing.Table
	// Scenes polls the long-form scenes' jobs; nil: there are none.
	Scenes ScenePolls
	// Inputs keeps the inputs too large for their record; nil: every
	// input stays in its record (stores without an item size limit).
	Inputs InputObjects
	// Files resolves the file URLs of image fields; nil: a file URL is a
	// 400.
	Files Files
	Settings
}

// PollerPorts are the poll queue consumer's ports. Scenes polls the
// long-form scenes' jobs (messages of kind job.KindScene); nil when there
// are none, like Notifier (no webhooks) and Slots
// (no caps). Outputs tags the outputs the copier keeps when their
// account's retention is not the default, and deletes those of a
// generation that did not end completed. Inputs reads the whole input of a
// generation that waited for a slot when its record keeps it elided.
type PollerPorts struct {
	Store     Store
	Upstreams Upstreams
	Queue     Queue
	Slots     Slots
	Copier    Copier
	Outputs   OutputFiles
	Notifier  Notifier
	Prices    *pricing.Table
	Scenes    ScenePolls
	Inputs    InputObjects
	// Files resolves the file URLs of a generation that waited for a
	// slot: the GET URLs of the copies its create made and checked are
	// presigned when it is submitted.
	Files Files
}

// NewPoller is the poll queue's consumer, on its ports.
func NewPoller(p PollerPorts, settings Settings) *Service {
	return &Service{Store: p.Store, Upstreams: p.Upstreams, Queue: p.Queue, Slots: p.Slots, Copier: p.Copier, Outputs: p.Outputs,
		Notifier: p.Notifier, Prices: p.Prices, Scenes: p.Scenes, Inputs: p.Inputs, Files: p.Files, Settings: settings}
}

func (s *Service) now() time.Time { return domain.Now(s.Now) }

func (s *Service) log() *slog.Logger { return domain.Logger(s.Log) }

// The settings, each its default when left zero (or set below zero).

func (s *Service) deadline(kind domain.MediaKind) time.Duration {
	if kind == domain.MediaImage {
		return cmp.Or(max(s.ImageDeadline, 0), defaultImageDeadline)
	}
	return cmp.Or(max(s.VideoDeadline, 0), DefaultVideoDeadline)
}

func (s *Service) pollParallelism() int {
	return cmp.Or(max(s.PollParallelism, 0), defaultPollParallelism)
}

func (s *Service) startMargin() time.Duration {
	return cmp.Or(max(s.StartMargin, 0), defaultStartMargin)
}

func (s *Service) recordMargin() time.Duration {
	return cmp.Or(max(s.RecordMargin, 0), defaultRecordMargin)
}

// engine is the job engine on the service's ports: the one that runs a
// long-form scene's job too.
func (s *Service) engine() *job.Engine {
	return &job.Engine{Upstreams: s.Upstreams, Slots: s.Slots, Copier: s.Copier, PollInterval: s.PollInterval,
		RecordMargin: s.recordMargin(), Now: s.Now}
}
