package domain

import (
	"encoding/json"
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
	ID           int64
	UUID         string
	UserID       string
	UpstreamID   string
	Model        string
	ModelVersion string
	Kind         MediaKind
	// Input is the request's input object, echoed as input_parameters.
	Input       json.RawMessage
	ImageCount  int
	OutputURLs  []string
	Status      Status
	Error       string
	CreditsUsed decimal.Decimal
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Deadline is when a generation still processing is failed as timed out.
	Deadline time.Time
}

// Outcome is the terminal state written to a record exactly once.
type Outcome struct {
	Status     Status
	OutputURLs []string
	Error      string
	// TotalDuration is the measured length of a long-form video, seconds.
	TotalDuration float64
}

// Scene is one scene of a long-form video.
type Scene struct {
	SceneNumber int    `json:"scene_number"`
	Prompt      string `json:"prompt"`
	Narration   string `json:"narration,omitempty"`
}

// LongVideo is a multi-scene narrated video.
type LongVideo struct {
	ID              string
	UserID          string
	Prompt          string
	Model           string
	LanguageCode    string
	EnableNarration bool
	VideoStyle      string
	Scenes          []Scene
	Status          Status
	FinalVideoURL   string
	TotalDuration   float64
	Error           string
	CreditsHeld     decimal.Decimal
	CreatedAt       time.Time
	UpdatedAt       time.Time
	Deadline        time.Time
}

// APIKey is the stored form of a key: only its SHA-256 hash is kept.
type APIKey struct {
	Hash      string
	Prefix    string
	UserID    string
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is valid
}

// Revoked reports whether the key was revoked.
func (k APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }
