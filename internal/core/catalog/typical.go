package catalog

import (
	"time"
)

// TypicalDuration is about how long a provider takes to run one job of
// the variant (GET /api/models serves it as typical_seconds).
func (v Variant) TypicalDuration() time.Duration { return v.Kind.TypicalDuration() }
