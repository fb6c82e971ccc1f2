package longform

import (
	"context"
	"errors"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// ErrWorkflowUnavailable is a workflow that could not be started; the hold is
// released and the video failed before the caller hears of it.
var ErrWorkflowUnavailable = errors.New("workflow unavailable")

// Store is what the long-form use cases need from the store.
type Store interface {
	Hold(ctx context.Context, userID string, h domain.Hold) error
	Capture(ctx context.Context, userID, workID string) (bool, error)
	Release(ctx context.Context, userID, workID string) (bool, error)
	Refund(ctx context.Context, userID, workID string) (bool, error)
	CreateLongVideo(ctx context.Context, v domain.LongVideo) error
	GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error
	ClaimLongVideoFinish(ctx context.Context, id string, at time.Time) error
	SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error
	BeginRegenerate(ctx context.Context, id string, r domain.Regeneration, at time.Time) error
	SetRegenerateState(ctx context.Context, id string, revision int, state domain.SceneState, at time.Time) error
	EndRegenerate(ctx context.Context, id string, revision int, o domain.Outcome, at time.Time) error
	ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error)
	// GetAccount gives the retention a completed video's files are kept
	// for.
	GetAccount(ctx context.Context, userID string) (domain.Account, error)
}

// Notifier enqueues a webhook event; nil means no webhooks.
type Notifier interface {
	Notify(ctx context.Context, kind domain.WorkKind, id, event string) error
	// NotifyRevision enqueues event for the revision of video id a scene
	// regenerate made: its own event (its own webhook-id).
	NotifyRevision(ctx context.Context, id string, revision int, event string) error
}

// Providers are the upstreams' clients by routing name, and the routes of
// each variant (*upstream.Router).
type Providers interface {
	Provider(name string) (upstream.Provider, error)
	Routes(model, version string) []routing.Route
	// Limit is an upstream's cap on jobs at once; 0 is none.
	Limit(name string) int
}

// Workflow starts the long-form state machine.
type Workflow interface {
	// Start runs the workflow once per name: starting the same name again
	// with the same input does not start a second execution.
	Start(ctx context.Context, name string, input []byte) error
	// Stop ends the named execution; stopping one that ended or never
	// started is not an error.
	Stop(ctx context.Context, name, cause string) error
}

// TaskTokens resumes the workflow's waiting tasks (Step Functions'
// SendTask* calls). A token no task waits on any more is domain.ErrTaskGone.
type TaskTokens interface {
	SendTaskSuccess(ctx context.Context, token string, output []byte) error
	SendTaskFailure(ctx context.Context, token, errorName, cause string) error
	SendTaskHeartbeat(ctx context.Context, token string) error
}

// Queue delays poll messages (the poller's queue).
type Queue interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

// Slots caps the jobs running at once at each upstream: scenes wait in the
// same lines as single generations.
type Slots interface {
	AcquireSlot(ctx context.Context, provider, holder string, limit int, at time.Time) (bool, error)
	ReleaseSlot(ctx context.Context, provider, holder string) error
}

// Upstreams are the routes of each variant and their upstreams' clients
// (*upstream.Router): a scene follows its video model's routes, with
// failover, as a single generation does.
type Upstreams interface {
	Providers
	Plans(ctx context.Context, v catalog.Variant, resolved map[string]any, imageCount int) ([]routing.Plan, error)
}

// Copier keeps the service's copy of an upstream output.
type Copier interface {
	Copy(ctx context.Context, src, keyBase string, kind domain.MediaKind) (string, error)
}

// Files moves files between the bucket and the step's scratch directory.
type Files interface {
	PutFile(ctx context.Context, key, path, contentType string) error
	GetFile(ctx context.Context, key, path string) error
	URL(key string) string
}

// MusicFiles finds the object the assembly reads a video's uploaded
// music from: the copy its create made and checked (media.SnapshotKey),
// or, for a video recorded before the copies were made (none there), the
// caller's upload, checked as at create. An unusable file is a
// *media.UnusableFileError. media.FileInputs is the implementation.
type MusicFiles interface {
	AudioKey(ctx context.Context, userID, workID, fileURL string) (string, error)
}

// Deleter deletes the bucket's objects; a key already gone is not an
// error.
type Deleter interface {
	Delete(ctx context.Context, keys []string) error
}

// servedDeleter is a Deleter that, for files whose URLs were handed out,
// also drops them from the CDN's caches (media.UncachingDeleter): a
// regenerate's Finalize deletes the revision it replaced so.
type servedDeleter interface {
	DeleteServed(ctx context.Context, keys []string) error
}

// Narrator speaks text in a language into an audio file under dir and
// returns its path and content type.
type Narrator interface {
	Speak(ctx context.Context, lang Language, text, dir string) (path, contentType string, err error)
}
