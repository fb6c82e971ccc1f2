package routing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// imageCountField is the rename key that names an upstream's image count.
const imageCountField = "image_count"

// countFields are the image count fields a published schema may name.
var countFields = []string{"num_outputs", "num_images"}

// errType is a value the upstream's type cannot hold.
var errType = errors.New("cannot be converted to the upstream's type")

// Plan is what one route sends for a request.
type Plan struct {
	Route Route
	// Input is the upstream input, typed.
	Input map[string]any
	// Jobs is how many jobs run it: 1, or one per image when the model
	// takes no image count.
	Jobs int
}

// Input maps a validated request onto a route: renames, image count,
// types (the route's, else the published schema's, else as sent), then
// constants. schema maps the upstream's input fields to their JSON types;
// nil when the upstream publishes none.
func (r Route) Input(v catalog.Variant, resolved map[string]any, imageCount int, schema map[string]string) (Plan, error) {
	in := make(map[string]any, len(resolved)+len(r.Set)+1)
	for k, val := range resolved {
		if to, ok := r.Rename[k]; ok {
			k = to
		}
		in[k] = val
	}
	plan := Plan{Route: r, Input: in, Jobs: 1}
	if v.Kind == domain.MediaImage {
		field := r.countField(v, schema)
		if field == "" {
			plan.Jobs = max(imageCount, 1)
		} else {
			in[field] = imageCount
		}
	}
	for k, val := range in {
		t := r.Types[k]
		if t == "" {
			t = schema[k]
		}
		typed, err := convert(val, t)
		if err != nil {
			return Plan{}, &ConvertError{Field: k, Type: t, Value: val}
		}
		in[k] = typed
	}
	for k, val := range r.Set {
		in[k] = val
	}
	return plan, nil
}

// countField is where the image count goes: the route's rename of
// image_count, the variant's own count field (zeta-pro's num_images), or a
// count field the schema publishes; "" when the model takes none.
func (r Route) countField(v catalog.Variant, schema map[string]string) string {
	if to, ok := r.Rename[imageCountField]; ok {
		return to
	}
	if _, ok := v.Field("num_images"); ok {
		if to, ok := r.Rename["num_images"]; ok {
			return to
		}
		return "num_images"
	}
	for _, f := range countFields {
		if _, ok := schema[f]; ok {
			return f
		}
	}
	return ""
}

// ConvertError is an input value the upstream's type cannot hold.
type ConvertError struct {
	Field, Type string
	Value       any
}

func (e *ConvertError) Error() string {
	raw, _ := json.Marshal(e.Value)
	s := string(raw)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Sprintf("input field %s: %s %s (%s)", e.Field, s, errType, e.Type)
}

func (e *ConvertError) Unwrap() error { return errType }

// convert gives a value the JSON type t ("integer", "number", "boolean",
// "string"); other types (arrays, objects, unknown) leave it as it is.
func convert(v any, t string) (any, error) {
	switch t {
	case "integer":
		switch x := v.(type) {
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, errType
			}
			return n, nil
		case float64:
			if x != math.Trunc(x) || math.IsInf(x, 0) {
				return nil, errType
			}
			return int64(x), nil
		case int:
			return int64(x), nil
		case int64:
			return x, nil
		}
		return nil, errType
	case "number":
		switch x := v.(type) {
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, errType
			}
			return f, nil
		case float64, int, int64:
			return x, nil
		}
		return nil, errType
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, errType
			}
			return b, nil
		}
		return nil, errType
	case "string":
		switch x := v.(type) {
		case string:
			return x, nil
		case bool:
			return strconv.FormatBool(x), nil
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		case int:
			return strconv.Itoa(x), nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		}
		return nil, errType
	}
	return v, nil
}

// SchemaTypes reads the input field types of a Replicate model version's
// OpenAPI schema (components.schemas.Input.properties.*.type, following an
// allOf or $ref to an enum schema).
func SchemaTypes(openAPI json.RawMessage) map[string]string {
	var doc struct {
		Components struct {
			Schemas map[string]schemaProp `json:"schemas"`
		} `json:"components"`
	}
	if json.Unmarshal(openAPI, &doc) != nil {
		return nil
	}
	input, ok := doc.Components.Schemas["Input"]
	if !ok {
		return nil
	}
	out := map[string]string{}
	for name, p := range input.Properties {
		if t := p.resolve(doc.Components.Schemas); t != "" {
			out[name] = t
		}
	}
	return out
}

type schemaProp struct {
	Type       string                `json:"type"`
	Ref        string                `json:"$ref"`
	AllOf      []schemaProp          `json:"allOf"`
	Properties map[string]schemaProp `json:"properties"`
}

func (p schemaProp) resolve(all map[string]schemaProp) string {
	if p.Type != "" {
		return p.Type
	}
	refs := []string{p.Ref}
	for _, a := range p.AllOf {
		if a.Type != "" {
			return a.Type
		}
		refs = append(refs, a.Ref)
	}
	for _, ref := range refs {
		if target, ok := all[strings.TrimPrefix(ref, "#/components/schemas/")]; ok && ref != "" && target.Type != "" {
			return target.Type
		}
	}
	return ""
}
