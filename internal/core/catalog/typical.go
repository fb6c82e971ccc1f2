package catalog

import (
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// typicalDurations is about how long a provider takes to run one job, by
// kind: the figure the status view's progress estimate and the CLI's
// time-left rest on while the provider reports none of its own.
var typicalDurations = map[domain.MediaKind]time.Duration{
	domain.MediaImage: 10 * time.Second,
	domain.MediaVideo: 60 * time.Second,
}

// TypicalDuration is about how long a provider takes to run one job of
// kind k (0 for an unknown kind).
func TypicalDuration(k domain.MediaKind) time.Duration { return typicalDurations[k] }

// TypicalDuration is about how long a provider takes to run one job of
// the variant (GET /api/models serves it as typical_seconds).
func (v Variant) TypicalDuration() time.Duration { return TypicalDuration(v.Kind) }
