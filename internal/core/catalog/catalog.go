// Package catalog describes the generation variants of the spec (their input
// fields, types, enum sets, limits and defaults) and validates generate
// requests against them.
package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// FieldType is the JSON shape an input field accepts.
type FieldType string

const (
	typeString  FieldType = "string"
	TypeBoolean FieldType = "boolean"
	// TypeEnum values are strings from Field.Enum; a JSON number whose
	// literal is in the set is accepted too and normalised to the string.
	TypeEnum FieldType = "enum"
	// TypeImage is one image reference: an https URL or a data:image URI.
	TypeImage FieldType = "image"
	// TypeImageList is an array of image references.
	TypeImageList FieldType = "image_list"
)

// defaultMaxImages is the most references an image_list field takes when the
// field sets no MaxItems of its own.
const defaultMaxImages = 8

// Field is one input field of a variant.
type Field struct {
	Name     string
	Type     FieldType
	Required bool
	// Enum is the allowed set of a TypeEnum field, in the spec's order.
	Enum []string
	// Default is the value used when the field is absent ("" = none). For a
	// boolean field it is "true" or "false".
	Default string
	// MinLen and MaxLen bound a string in characters (runes); 0 = no bound.
	MinLen, MaxLen int
	// MaxItems bounds an image_list field; 0 = defaultMaxImages.
	MaxItems    int
	Description string
}

// Variant is one model_version of a provider.
type Variant struct {
	Model, Version string
	Kind           domain.MediaKind
	Fields         []Field
	// UpstreamModel is the "owner/name" the upstream provider runs.
	UpstreamModel string
	// FixedDurationSeconds is the clip length of a video variant that has
	// no duration field (0 otherwise).
	FixedDurationSeconds int
}

// ErrUnknownVariant is returned by Lookup for a model/version pair that is
// not in the catalog.
var ErrUnknownVariant = errors.New("unknown variant")

// durationFields name a video's length in seconds, in order of precedence.
// beta-2-enchanted has both duration and n_frames with the same values; the
// catalog treats them as one setting so that the price and the clip agree.
var durationFields = []string{"duration", "seconds", "n_frames"}

// All returns every variant in the spec's order. The result is a copy; the
// caller may change it freely.
func All() []Variant {
	out := make([]Variant, len(variants))
	for i, v := range variants {
		out[i] = v.clone()
	}
	return out
}

// Models returns the provider identifiers in the order they first appear.
func Models() []string {
	var out []string
	for _, v := range variants {
		if !slices.Contains(out, v.Model) {
			out = append(out, v.Model)
		}
	}
	return out
}

// versions returns the model_versions of one model in spec order.
func versions(model string) []string {
	var out []string
	for _, v := range variants {
		if v.Model == model {
			out = append(out, v.Version)
		}
	}
	return out
}

// VideoVersions returns the model_versions of the video variants.
func VideoVersions() []string {
	var out []string
	for _, v := range variants {
		if v.Kind == domain.MediaVideo {
			out = append(out, v.Version)
		}
	}
	return out
}

// Lookup finds the variant of a model and version.
func Lookup(model, version string) (Variant, error) {
	for _, v := range variants {
		if v.Model == model && v.Version == version {
			return v.clone(), nil
		}
	}
	if len(versions(model)) == 0 {
		return Variant{}, fmt.Errorf("%w: model %q (allowed: %s)", ErrUnknownVariant, model, strings.Join(Models(), ", "))
	}
	return Variant{}, fmt.Errorf("%w: model %q has no version %q (allowed: %s)",
		ErrUnknownVariant, model, version, strings.Join(versions(model), ", "))
}

// LookupVersion finds a variant by its model_version alone; versions are
// unique across models.
func LookupVersion(version string) (Variant, error) {
	if v, ok := byVersion(version); ok {
		return v.clone(), nil
	}
	return Variant{}, fmt.Errorf("%w: model_version %q", ErrUnknownVariant, version)
}

func byVersion(version string) (Variant, bool) {
	for _, v := range variants {
		if v.Version == version {
			return v, true
		}
	}
	return Variant{}, false
}

// Field returns the input field of that name.
func (v Variant) Field(name string) (Field, bool) {
	for _, f := range v.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// FieldNames lists the input fields in spec order.
func (v Variant) FieldNames() []string {
	names := make([]string, len(v.Fields))
	for i, f := range v.Fields {
		names[i] = f.Name
	}
	return names
}

// DurationField is the field that sets a video's length (duration or
// seconds); false for images and for video-01, whose length is fixed.
func (v Variant) DurationField() (Field, bool) {
	for _, name := range durationFields {
		if f, ok := v.Field(name); ok {
			return f, true
		}
	}
	return Field{}, false
}

// Durations lists the clip lengths in seconds a video variant can produce,
// ascending; nil for images.
func (v Variant) Durations() []int {
	if v.Kind != domain.MediaVideo {
		return nil
	}
	f, ok := v.DurationField()
	if !ok {
		return []int{v.FixedDurationSeconds}
	}
	var out []int
	for _, s := range f.Enum {
		if n, err := strconv.Atoi(s); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// NearestDuration is the clip length closest to seconds that the variant can
// produce; on a tie the longer clip wins, since trimming keeps real motion
// where slowing a shorter clip would not. 0 for images.
func (v Variant) NearestDuration(seconds int) int {
	best := 0
	for _, d := range v.Durations() {
		if best == 0 || abs(d-seconds) < abs(best-seconds) || (abs(d-seconds) == abs(best-seconds) && d > best) {
			best = d
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// DurationSeconds is the video length a request asks for: from its duration
// field, else that field's default, else the fixed length. 0 for images.
func (v Variant) DurationSeconds(resolved map[string]any) int {
	if v.Kind != domain.MediaVideo {
		return 0
	}
	for _, name := range durationFields {
		if _, ok := v.Field(name); !ok {
			continue
		}
		if s, ok := resolved[name].(string); ok {
			if n, err := strconv.Atoi(s); err == nil {
				return n
			}
		}
	}
	if f, ok := v.DurationField(); ok {
		n, _ := strconv.Atoi(f.Default)
		return n // 0 when a required length (beta-2 seconds) is missing
	}
	return v.FixedDurationSeconds
}

// Resolve returns a validated input with the defaults of absent fields
// filled in: what is sent upstream and priced. All fields naming the clip
// length (duration, n_frames) carry the same value, so the provider cannot
// pick a length other than the one charged for.
func (v Variant) Resolve(input map[string]any) map[string]any {
	out := make(map[string]any, len(v.Fields))
	for k, val := range input {
		if list, ok := val.([]any); ok {
			val = slices.Clone(list)
		}
		out[k] = val
	}
	for _, f := range v.Fields {
		if _, set := out[f.Name]; set || f.Default == "" {
			continue
		}
		if f.Type == TypeBoolean {
			out[f.Name] = f.Default == "true"
		} else {
			out[f.Name] = f.Default
		}
	}
	length := ""
	for _, name := range durationFields {
		if s, ok := input[name].(string); ok && length == "" {
			length = s
		}
	}
	if length == "" {
		if f, ok := v.DurationField(); ok {
			length = f.Default
		}
	}
	if length != "" {
		for _, name := range durationFields {
			if _, ok := v.Field(name); ok {
				out[name] = length
			}
		}
	}
	return out
}

func (v Variant) clone() Variant {
	v.Fields = slices.Clone(v.Fields)
	for i := range v.Fields {
		v.Fields[i].Enum = slices.Clone(v.Fields[i].Enum)
	}
	return v
}
