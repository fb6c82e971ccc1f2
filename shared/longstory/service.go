package longstory

import (
	"log/slog"
	"time"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/pricing"
)

// Service runs the long-form use cases.
type Service struct {
	Store    Store
	Workflow Workflow
	Prices   *pricing.Table
	// Upstream cancels the scenes' jobs when a video is canceled, and
	// Slots frees their places at the upstreams' caps.
	Upstream   Providers
	Slots      Slots
	Notifier   Notifier
	Validation catalog.Options
	Now        func() time.Time
	Log        *slog.Logger
}

func (s *Service) now() time.Time { return domain.Now(s.Now) }

func (s *Service) log() *slog.Logger { return domain.Logger(s.Log) }
