package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// FieldError is one bad field of a request.
type FieldError struct {
	// Field is the path of the field, such as "input.duration",
	// "model_version", "image_count" or "body" for the body as a whole.
	// The JSON names are those of the error envelope's details.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists every problem of a request. It matches
// domain.ErrInvalid under errors.Is.
type ValidationError struct {
	Message string
	// Details are sorted by field, then message, so output is stable.
	Details []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Details) == 0 {
		return e.Message
	}
	parts := make([]string, len(e.Details))
	for i, d := range e.Details {
		parts[i] = d.Field + ": " + d.Message
	}
	return e.Message + ": " + strings.Join(parts, "; ")
}

func (e *ValidationError) Is(target error) bool { return target == domain.ErrInvalid }

// Problems collects field errors during one validation pass; Err turns
// them into one *ValidationError with every field, sorted.
type Problems []FieldError

func (p *Problems) Add(field, message string) {
	*p = append(*p, FieldError{Field: field, Message: message})
}

// has reports whether a field already has a problem, so that later rules do
// not pile a second message on the same cause.
func (p Problems) Has(field string) bool {
	return slices.ContainsFunc(p, func(e FieldError) bool { return e.Field == field })
}

// Bounds of what an error repeats of a request, so that the answer (and an
// idempotent answer kept for a day) stays small whatever the body holds.
const (
	// MaxEchoRunes bounds a name or value of the client's quoted in a
	// message or a detail's field.
	MaxEchoRunes = 64
	// maxUnknownListed bounds the unknown fields of one object listed one
	// by one; the rest are counted in one more detail.
	maxUnknownListed = 10
	// maxDetails bounds the details of one error; the rest are counted in
	// one more detail.
	maxDetails = 50
)

// Clip shortens client text that a message repeats to MaxEchoRunes runes,
// with an ellipsis when it was cut.
func Clip(s string) string {
	if len(s) <= MaxEchoRunes || utf8.RuneCountInString(s) <= MaxEchoRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxEchoRunes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Unknown reports the keys of obj not in allowed, each under prefix + its
// name ("input.style"; prefix "" for the top level), clipped: at most
// maxUnknownListed of them, in name order, then one detail on the object
// itself (or "body") counting the others.
func (p *Problems) Unknown(prefix string, obj map[string]any, allowed []string) {
	var unknown []string
	for k := range obj {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return
	}
	slices.Sort(unknown)
	list := strings.Join(allowed, ", ")
	for _, k := range unknown[:min(len(unknown), maxUnknownListed)] {
		p.Add(prefix+Clip(k), fmt.Sprintf("unknown field %q (allowed: %s)", Clip(k), list))
	}
	if more := len(unknown) - maxUnknownListed; more > 0 {
		field := strings.TrimSuffix(prefix, ".")
		if field == "" {
			field = "body"
		}
		p.Add(field, fmt.Sprintf("and %d more unknown fields (allowed: %s)", more, list))
	}
}

func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	details := slices.Clone(p)
	slices.SortStableFunc(details, func(a, b FieldError) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	if more := len(details) - maxDetails; more > 0 {
		details = append(details[:maxDetails:maxDetails], FieldError{Field: "body", Message: fmt.Sprintf("and %d more problems not listed", more)})
	}
	msg := "the request is invalid"
	if len(details) > 1 {
		msg = "the request has several invalid fields"
	}
	return &ValidationError{Message: msg, Details: details}
}

func bodyError(message string) error {
	return &ValidationError{Message: "the request body is not a valid JSON object", Details: []FieldError{{Field: "body", Message: message}}}
}
