package domain

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Status is the lifecycle of a generation or long-form video:
// processing → completed | failed (| canceled).
type Status string

const (
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
	StatusCanceled   Status = "canceled"
)

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool { return s != StatusProcessing }

// MediaKind says whether a variant produces images or videos.
type MediaKind string

const (
	MediaImage MediaKind = "image"
	MediaVideo MediaKind = "video"
)

// Generation is one single image or video generation.
type Generation struct {
	// ID is the integer id from the generations sequence; UUID is the
	// primary key and the id of the status view.
	ID     int64
	UUID   string
	UserID string
	// UpstreamID is the id of the first job at the upstream (the record's
	// upstream_id); UpstreamJobs lists every job, UpstreamJobs[0] first.
	UpstreamID string
	// Upstream and UpstreamModel name the route that ran it: the routing
	// file's upstream and the model there. Empty until submitted.
	Upstream      string
	UpstreamModel string
	UpstreamJobs  []UpstreamJob
	Model         string
	ModelVersion  string
	Kind          MediaKind
	// Input is the request's input object, echoed as input_parameters.
	// When InputObject is set, the record keeps only its elided form (its
	// data: URI images shortened) and the whole input is that object.
	Input json.RawMessage
	// InputObject is the bucket key of the whole input of a request too
	// large for its record (media.InputKey); "" when Input is whole.
	InputObject string
	ImageCount  int
	OutputURLs  []string
	Status      Status
	Error       string
	CreditsUsed decimal.Decimal
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Deadline is when a generation still processing is failed as timed out.
	Deadline time.Time
	// CancelAt is the caller's deadline (deadline_seconds after
	// creation): still processing then, the generation is canceled
	// upstream and ends canceled with DeadlineError. Zero: none.
	CancelAt time.Time
	// Progress is the provider's own figure of the work done, 0-100 (its
	// logs' percentages, averaged over the jobs), as last polled; 0 when
	// the provider reported none. It only grows.
	Progress int
	// Files is the life of its outputs in the bucket: when they expire,
	// and whether they were deleted.
	Files   StoredFiles
	Webhook Webhook
	// WebhookAttempts lists the deliveries of its webhook events.
	WebhookAttempts []WebhookAttempt
}

// UpstreamJob is one job at an upstream. A generation has one, or one per
// image when its model takes no image count.
type UpstreamJob struct {
	ID string `json:"id"`
	// The URLs the provider answered to the submit (fal's queue), kept
	// because they cannot be rebuilt from the id for every app.
	StatusURL   string `json:"status_url,omitempty"`
	ResponseURL string `json:"response_url,omitempty"`
	CancelURL   string `json:"cancel_url,omitempty"`
}

// UpstreamRun is where a generation runs: the upstream, its model and the
// jobs there.
type UpstreamRun struct {
	Upstream string
	Model    string
	Jobs     []UpstreamJob
}

// Outcome is the terminal state written to a record exactly once.
type Outcome struct {
	Status     Status
	OutputURLs []string
	Error      string
	// TotalDuration is the measured length of a long-form video, seconds.
	TotalDuration float64
	// OutputExpiresAt is when the outputs of a completed record stop being
	// kept (StoredFiles.ExpiresAt); zero for the other outcomes.
	OutputExpiresAt time.Time
}

// Scene is one scene of a long-form video.
type Scene struct {
	SceneNumber int    `json:"scene_number"`
	Prompt      string `json:"prompt"`
	Narration   string `json:"narration,omitempty"`
	// Model is the video model_version this scene is made by (issue 28's
	// per-scene override); "" is the video's own model.
	Model string `json:"model,omitempty"`
}

// SceneModel is the model_version that makes scene sc of video v.
func (v LongVideo) SceneModel(sc Scene) string {
	if sc.Model != "" {
		return sc.Model
	}
	return v.Model
}

// Studio is how a long video is produced beyond the spec's request (issue
// 28). Each empty field is the spec's default, so the zero value makes the
// video the spec's request makes.
type Studio struct {
	// AspectRatio is "portrait" (720x1280) or "" (landscape, 1280x720).
	AspectRatio string `json:"aspect_ratio,omitempty"`
	// Captions is "sidecar" (a WebVTT file beside the final video),
	// "burned" (drawn on the picture too) or "" (none).
	Captions string `json:"captions,omitempty"`
	// Transition is "crossfade" or "" (cut).
	Transition string `json:"transition,omitempty"`
	// MusicURL is the music under the video (a data:audio URI), "" for
	// none; MusicVolume its gain (0–1), nil for the default.
	MusicURL    string   `json:"music_url,omitempty"`
	MusicVolume *float64 `json:"music_volume,omitempty"`
	// Voice is the narration's voice (an id of longform.Voices in the
	// video's language), "" for the language's default voice.
	Voice string `json:"voice,omitempty"`
	// NarrationSpeed is the tempo the narration is read at (0.5–1.5),
	// nil for 1; a narration that does not fit its scene at it is sped
	// up further, at most 1.5× in all.
	NarrationSpeed *float64 `json:"narration_speed,omitempty"`
}

// Transitions between a long video's scenes.
const (
	TransitionCut       = "cut"
	TransitionCrossfade = "crossfade"
)

// Crossfade says whether each scene fades into the next.
func (s Studio) Crossfade() bool { return s.Transition == TransitionCrossfade }

// Caption modes of a long video.
const (
	CaptionsNone    = "none"
	CaptionsSidecar = "sidecar"
	CaptionsBurned  = "burned"
)

// CaptionsFile says whether the video has a WebVTT file.
func (s Studio) CaptionsFile() bool {
	return s.Captions == CaptionsSidecar || s.Captions == CaptionsBurned
}

// Portrait says whether the video is made upright (720x1280).
func (s Studio) Portrait() bool { return s.AspectRatio == AspectPortrait }

// Frame shapes of a long video.
const (
	AspectLandscape = "landscape"
	AspectPortrait  = "portrait"
)

// LongVideo is a multi-scene narrated video.
type LongVideo struct {
	ID              string
	UserID          string
	Prompt          string
	Model           string
	LanguageCode    string
	EnableNarration bool
	VideoStyle      string
	// Studio holds the production options beyond the spec's request;
	// its zero value is the spec's video.
	Studio        Studio
	Scenes        []Scene
	Status        Status
	FinalVideoURL string
	TotalDuration float64
	Error         string
	CreditsHeld   decimal.Decimal
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Deadline      time.Time
	// Files is the life of its final video and working files (the scenes'
	// clips and narration) in the bucket.
	Files           StoredFiles
	Webhook         Webhook
	WebhookAttempts []WebhookAttempt
	// SceneStatus is each scene's state by scene number, as the workflow
	// reports it; a scene not listed has not started.
	SceneStatus map[int]SceneState
	// Revision is the video's render: 1 for the first, then the revision of
	// each regenerate of a scene that completed (a record stored before
	// revisions reads as 1).
	Revision int
	// LastRegenerate is the revision the latest regenerate begun made or
	// was to make (0: none began). Each regenerate takes the next number
	// (NextRevision), so a canceled or failed one leaves a gap: its
	// execution and its hold keep names of their own.
	LastRegenerate int
	// Regenerating is the regenerate of one scene running on the completed
	// video, nil when none is: the video stays completed at Revision, with
	// its final video, until it ends.
	Regenerating *Regeneration
}

// NextRevision is the revision a regenerate begun now makes: one more
// than any the video was at or any regenerate of it began.
func (v LongVideo) NextRevision() int { return max(v.Revision, v.LastRegenerate, 1) + 1 }

// Regeneration is the re-render of one scene of a completed video while it
// runs. Only that scene is made again (and narrated again when its text
// changed); the other clips are reused as stored.
type Regeneration struct {
	SceneNumber int `json:"scene_number"`
	// Revision is the revision it makes: the video's NextRevision.
	Revision int `json:"revision"`
	// Prompt and Narration are the scene's texts for this render: the
	// request's, else the stored ones. They replace the scene's texts when
	// the regenerate completes.
	Prompt    string `json:"prompt"`
	Narration string `json:"narration,omitempty"`
	// Model makes and prices the scene (its own, else the video's).
	Model string `json:"model"`
	// CreditsHeld is the scene's own hold.
	CreditsHeld decimal.Decimal `json:"credits_held"`
	StartedAt   time.Time       `json:"started_at"`
	// State is the scene's job, as SceneStatus keeps a first render's.
	State SceneState `json:"state"`
}

// Applied is scenes with the regenerated scene's texts replaced by the
// regenerate's (a new slice; the others as they are).
func (r Regeneration) Applied(scenes []Scene) []Scene {
	out := append([]Scene(nil), scenes...)
	for i := range out {
		if out[i].SceneNumber == r.SceneNumber {
			out[i].Prompt, out[i].Narration = r.Prompt, r.Narration
		}
	}
	return out
}

// Made is the scene's state once the regenerate completed: its job's,
// completed, with the clip of the regenerate's revision.
func (r Regeneration) Made() SceneState {
	st := r.State
	st.Status, st.Submitting, st.Revision = StatusCompleted, false, r.Revision
	return st
}

// RegenerateTimeout bounds a regenerate's run, as a video's Deadline
// bounds its first render: past it the sweeper ends it failed.
const RegenerateTimeout = time.Hour

// Deadline is when the regenerate is ended failed if it still runs.
func (r Regeneration) Deadline() time.Time { return r.StartedAt.Add(RegenerateTimeout) }

// RegenerateWorkID names a regenerate's hold and its journal entries: its
// own work, apart from the video's (a hold of kind WorkLongVideo).
func RegenerateWorkID(videoID string, scene, revision int) string {
	return fmt.Sprintf("%s#scene-%d-r%d", videoID, scene, revision)
}

// RegenerateOf reads a regenerate's work id (RegenerateWorkID); ok is
// false for any other work id, such as a video's own.
func RegenerateOf(workID string) (videoID string, scene, revision int, ok bool) {
	i := strings.LastIndex(workID, "#scene-")
	if i <= 0 {
		return "", 0, 0, false
	}
	sceneText, revText, found := strings.Cut(workID[i+len("#scene-"):], "-r")
	scene, err1 := strconv.Atoi(sceneText)
	revision, err2 := strconv.Atoi(revText)
	// Written by RegenerateWorkID only: its own spelling, nothing else.
	if !found || err1 != nil || err2 != nil || scene < 1 || revision < 2 || RegenerateWorkID(workID[:i], scene, revision) != workID {
		return "", 0, 0, false
	}
	return workID[:i], scene, revision, true
}

// SceneState is where one scene of a long video is. A scene is a child
// job of its video: the job engine (package job) runs it as it runs a
// generation's, so its job is kept as a generation keeps each of its own.
type SceneState struct {
	Status Status
	// Upstream names the routing file's upstream that runs the job.
	Upstream string
	// UpstreamJob is the scene's job as its upstream answered the create
	// (its ID "" until then), so a cancel can stop it and the poller read
	// it.
	UpstreamJob
	// Progress is the provider's own figure of the scene's job, 0-100, as
	// last polled (its logs' progress lines); 0 when it reported none.
	Progress int
	// Submitting marks a create sent to Upstream whose answer is not yet
	// recorded: a retried submit that finds it never creates again, since
	// the first create may have started a paid job.
	Submitting bool
	// Revision is the video's revision that made the scene's clip: 0 for
	// the first render, else the regenerate's (its clip is kept under a
	// key of that revision).
	Revision int
}

// sceneStateJSON is a SceneState as JSON (the local store keeps it so):
// the names it had before it embedded UpstreamJob, so records written
// before and after read alike.
type sceneStateJSON struct {
	Status      Status `json:"status"`
	UpstreamID  string `json:"upstream_id,omitempty"`
	Upstream    string `json:"upstream,omitempty"`
	CancelURL   string `json:"cancel_url,omitempty"`
	StatusURL   string `json:"status_url,omitempty"`
	ResponseURL string `json:"response_url,omitempty"`
	Submitting  bool   `json:"submitting,omitempty"`
	Progress    int    `json:"progress,omitempty"`
	Revision    int    `json:"revision,omitempty"`
}

// MarshalJSON writes the stored names (sceneStateJSON).
func (s SceneState) MarshalJSON() ([]byte, error) {
	return json.Marshal(sceneStateJSON{Status: s.Status, UpstreamID: s.ID, Upstream: s.Upstream, CancelURL: s.CancelURL,
		StatusURL: s.StatusURL, ResponseURL: s.ResponseURL, Submitting: s.Submitting, Progress: s.Progress, Revision: s.Revision})
}

// UnmarshalJSON reads the stored names (sceneStateJSON).
func (s *SceneState) UnmarshalJSON(b []byte) error {
	var j sceneStateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = SceneState{Status: j.Status, Upstream: j.Upstream, Submitting: j.Submitting, Progress: j.Progress, Revision: j.Revision,
		UpstreamJob: UpstreamJob{ID: j.UpstreamID, StatusURL: j.StatusURL, ResponseURL: j.ResponseURL, CancelURL: j.CancelURL}}
	return nil
}

// Run is where the scene's job runs, as the job engine takes it: no job
// until one is recorded.
func (s SceneState) Run() UpstreamRun {
	run := UpstreamRun{Upstream: s.Upstream}
	if s.ID != "" {
		run.Jobs = []UpstreamJob{s.UpstreamJob}
	}
	return run
}

// SceneSlotHolder names scene n of a long video in its upstream's slot
// line (a generation is named by its UUID).
func SceneSlotHolder(videoID string, n int) string { return fmt.Sprintf("%s#scene-%d", videoID, n) }

// APIKey is the stored form of a key: only its SHA-256 hash is kept.
type APIKey struct {
	Hash   string
	Prefix string
	UserID string
	// Name is the holder's label for the key ("ci", "laptop").
	Name string
	// Scopes are what the key may do, in AllScopes order; a stored key
	// reads with every scope when it was made before scopes existed
	// (KeyScopes).
	Scopes []Scope
	// DailyCreditLimit caps what the key's holds may take per UTC day;
	// zero: no cap.
	DailyCreditLimit decimal.Decimal
	// Ancestors are the keys above this one, nearest first: the key that
	// made it (CreatedBy), the key that made that one, and so on up to a
	// key of the owner's. Empty for the owner's own keys (made by the
	// admin command or an identity-provider token, or before keys recorded
	// their maker). Their limits are copied here when the key is made
	// (a key's limit never changes), so a hold checks every limit above it
	// without reading them.
	Ancestors []KeyLimit
	CreatedAt time.Time
	// LastUsedAt is when the key last authenticated a request, to within
	// LastUsedGranularity; zero: never.
	LastUsedAt time.Time
	RevokedAt  time.Time // zero while the key is valid
}

// Revoked reports whether the key was revoked.
func (k APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// KeyLimit is a key of a chain of keys and its daily credit limit (zero:
// none).
type KeyLimit struct {
	Prefix           string
	DailyCreditLimit decimal.Decimal
}

// CreatedBy is the prefix of the key that made k ("" for the owner's keys).
func (k APIKey) CreatedBy() string {
	if len(k.Ancestors) == 0 {
		return ""
	}
	return k.Ancestors[0].Prefix
}

// Webhook is where and for which events a caller wants to hear of a
// record's end. URL is empty when no webhook was asked for.
type Webhook struct {
	URL    string
	Events []string
}

// Wants says whether the webhook asked for the event.
func (w Webhook) Wants(event string) bool {
	if w.URL == "" {
		return false
	}
	if len(w.Events) == 0 {
		return true
	}
	for _, e := range w.Events {
		if e == event {
			return true
		}
	}
	return false
}

// MaxWebhookAttempts bounds the attempts a record keeps (a store refuses
// more with ErrWebhookAttemptsFull): a long video's every regenerate adds
// an event of its own, so without a bound a receiver that always fails
// would grow the record, and its status view, toward DynamoDB's 400 KB
// item limit, past which no write of the video succeeds. Further attempts
// are still made, only not listed (so a message the queue delivers twice
// may then be posted twice: receivers drop repeats by webhook-id).
const MaxWebhookAttempts = 100

// WebhookAttempt is one delivery attempt of a webhook event, kept on the
// record so that a caller can see what was sent and how it went.
type WebhookAttempt struct {
	WebhookID  string    `json:"webhook_id"`
	Event      string    `json:"event"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	Delivered  bool      `json:"delivered"`
}

// Usage is what an account spent in one calendar month (UTC): the credits
// captured and the jobs they paid for.
type Usage struct {
	Credits decimal.Decimal
	Jobs    int
}

// UsageMonth names the month of t as the store keys usage ("2006-01").
func UsageMonth(t time.Time) string { return t.UTC().Format("2006-01") }

// MaxIdempotentAnswer bounds the answer an idempotency record keeps, so
// that no request can make the store keep more for a day. Answers to
// accepted requests are a few KB; a larger one is not kept (see
// httpapi.Idempotency), and the stores refuse it.
const MaxIdempotentAnswer = 64 << 10

// IdempotencyRecord remembers the first answer to a POST sent with an
// Idempotency-Key, so that a retry gets the same answer and pays nothing more.
type IdempotencyRecord struct {
	UserID string
	Key    string
	// Fingerprint is a hash of the route and body; the same key with another
	// fingerprint is refused.
	Fingerprint string
	// StatusCode is 0 while the first request is still being handled.
	StatusCode int
	Body       []byte
	CreatedAt  time.Time
	ExpiresAt  time.Time
}
