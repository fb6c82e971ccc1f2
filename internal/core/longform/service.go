package longform

import (
	"log/slog"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Settings are the long-form routes' knobs.
type Settings struct {
	Validation catalog.Options
	Now        func() time.Time
	Log        *slog.Logger
}

// service is the core the long-form routes' use cases share. Each route
// has a use case of its own that takes only what it uses: NewCreator,
// NewReader and NewCanceler (and the estimate needs only the prices).
type service struct {
	Store    Store
	Workflow Workflow
	Prices   *pricing.Table
	// Upstream cancels the scenes' jobs when a video is canceled, and
	// Slots frees their places at the upstreams' caps.
	Upstream Providers
	Slots    Slots
	Notifier Notifier
	// Music checks a music_url given as a URL at create.
	Music *MusicCheck
	Settings
}

func (s *service) now() time.Time { return domain.Now(s.Now) }

func (s *service) log() *slog.Logger { return domain.Logger(s.Log) }
