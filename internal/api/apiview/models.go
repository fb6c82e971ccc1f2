package apiview

import "encoding/json"

// ModelList is the answer of GET /api/models.
type ModelList struct {
	Models []Model `json:"models"`
}

// Model is one variant of the public catalog: its kind, the JSON Schema
// (2020-12) of its input (built from the fields the validator checks) and
// its price rule in credits.
type Model struct {
	Model   string `json:"model"`
	Version string `json:"version"`
	// Kind is "image" or "video".
	Kind        string          `json:"kind"`
	InputSchema json.RawMessage `json:"input_schema"`
	Price       Price           `json:"price"`
	// TypicalSeconds is about how long the provider takes to run one job
	// of the variant, for a time-left estimate while it runs.
	TypicalSeconds int `json:"typical_seconds"`
}

// Price is a price rule in credits. A request costs credits_per_unit of the
// first case whose every "when" field has the request's value (defaults
// included), else the rule's own, times its units, rounded up to 0.01.
type Price struct {
	// Basis is per_second, per_image or per_generation (for image variants
	// charged per image).
	Basis string `json:"basis"`
	// Unit is what one credits_per_unit buys: second, image or video.
	Unit           string      `json:"unit"`
	CreditsPerUnit string      `json:"credits_per_unit"`
	Cases          []PriceCase `json:"cases,omitempty"`
	// CreditsAtDefaults is the price of one video, or one image, with every
	// option at its default; absent when a required option has no default
	// (beta-2's seconds).
	CreditsAtDefaults string `json:"credits_at_defaults,omitempty"`
}

// PriceCase is one conditional price.
type PriceCase struct {
	When           map[string]string `json:"when"`
	CreditsPerUnit string            `json:"credits_per_unit"`
}
