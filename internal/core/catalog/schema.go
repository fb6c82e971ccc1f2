package catalog

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// schemaDialect is the JSON Schema version InputSchema writes.
const schemaDialect = "https://json-schema.org/draft/2020-12/schema"

// imageRefPattern is the start every image reference must have: an http(s)
// URL or a data: URI, in any letter case as the validator accepts them
// (written without inline flags, which ECMA-262 patterns lack). Whether the
// host is public, and whether a data: URI holds a supported image of the
// allowed size, is checked by the validator only.
const imageRefPattern = "^([hH][tT][tT][pP][sS]?://|[dD][aA][tT][aA]:|mediagen://files/[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$)"

// nonBlankPattern matches a string with a character other than white space,
// which a required text field must have.
const nonBlankPattern = `\S`

// InputSchema is the JSON Schema (2020-12) of the variant's input object,
// built from the same Fields that ParseGenerate validates with: every field
// with its type, enum set, default, length bounds and description, the
// required ones, and no other fields (additionalProperties false); and
// x-field-order, the fields in the spec's order.
//
// The schema accepts everything the validator accepts. The validator is
// stricter where a schema cannot follow it: image URLs must name a public
// host and data: URIs must hold a real image of at most
// DefaultMaxDataURIBytes; beta-2-enchanted's duration and n_frames must
// agree; and a number for an enum field must be written as the enum's
// literal (4, not 4.0, which JSON Schema counts as equal).
func (v Variant) InputSchema() map[string]any {
	props := make(map[string]any, len(v.Fields))
	required := []string{}
	for _, f := range v.Fields {
		props[f.Name] = f.schema()
		if f.Required {
			required = append(required, f.Name)
		}
	}
	return map[string]any{
		"$schema":              schemaDialect,
		"title":                v.Model + "/" + v.Version + " input",
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
		// JSON objects have no order; a form shows the fields in this one,
		// the spec's (an annotation keyword, which validators ignore).
		"x-field-order": v.FieldNames(),
	}
}

// schema is one field's JSON Schema.
func (f Field) schema() map[string]any {
	s := map[string]any{}
	if f.Description != "" {
		s["description"] = f.Description
	}
	switch f.Type {
	case typeString:
		s["type"] = "string"
		if f.MinLen > 0 {
			s["minLength"] = f.MinLen
		}
		if f.MaxLen > 0 {
			s["maxLength"] = f.MaxLen
		}
		if f.Required {
			s["pattern"] = nonBlankPattern
		}
	case TypeBoolean:
		s["type"] = "boolean"
		if f.Default != "" {
			s["default"] = f.Default == "true"
		}
		return s
	case TypeEnum:
		// The strings first (what the spec sends and a form offers), then
		// the numbers the validator also takes for numeric values.
		values := make([]any, 0, 2*len(f.Enum))
		for _, e := range f.Enum {
			values = append(values, e)
		}
		for _, e := range f.Enum {
			if _, err := strconv.ParseInt(e, 10, 64); err == nil {
				values = append(values, json.Number(e))
			}
		}
		s["enum"] = values
		if len(values) == len(f.Enum) {
			// Strings only: typed, so that generators (oapi-codegen) give
			// the field a string type of its own rather than any value.
			s["type"] = "string"
		}
	case TypeImage:
		s["type"] = "string"
		s["pattern"] = imageRefPattern
		s["maxLength"] = MaxImageRefLength
		s["description"] = describeImage(f.Description, "An https URL, a data:image/(png|jpeg|webp|gif);base64 URI"+dataURILimit+", or a file URL mediagen://files/<file_id> from POST /api/files.")
	case TypeImageList:
		maxItems := f.MaxItems
		if maxItems == 0 {
			maxItems = defaultMaxImages
		}
		s["type"] = "array"
		s["items"] = map[string]any{"type": "string", "pattern": imageRefPattern, "maxLength": MaxImageRefLength}
		s["minItems"] = 1
		s["maxItems"] = maxItems
		s["description"] = describeImage(f.Description, "Each an https URL, a data:image/(png|jpeg|webp|gif);base64 URI"+dataURILimit+", or a file URL mediagen://files/<file_id> from POST /api/files.")
	}
	if f.Default != "" {
		s["default"] = f.Default
	}
	return s
}

// MaxImageRefLength is the longest image reference: a data: URI of a
// DefaultMaxDataURIBytes image ("data:image/jpeg;base64," and its base64),
// far longer than the longest URL (MaxURLLength).
const MaxImageRefLength = len("data:image/jpeg;base64,") + (DefaultMaxDataURIBytes+2)/3*4

// dataURILimit says the decoded size limit in the schemas' descriptions.
var dataURILimit = fmt.Sprintf(" of at most %s bytes decoded", groupThousands(DefaultMaxDataURIBytes))

// groupThousands writes n with commas between groups of three digits.
func groupThousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func describeImage(desc, how string) string {
	if desc == "" {
		return how
	}
	return desc + " " + how
}
