package domain

import "time"

// typicalDurations is about how long a provider takes to run one job, by
// kind: the figure the status view's progress estimate and the CLI's
// time-left rest on while the provider reports none of its own.
var typicalDurations = map[MediaKind]time.Duration{
	MediaImage: 10 * time.Second,
	MediaVideo: 60 * time.Second,
}

// TypicalDuration is about how long a provider takes to run one job of
// kind k (0 for an unknown kind).
func (k MediaKind) TypicalDuration() time.Duration { return typicalDurations[k] }
