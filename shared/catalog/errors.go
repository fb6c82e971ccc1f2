package catalog

import (
	"cmp"
	"slices"
	"strings"

	"github.com/mediagen-dev/mediagen/shared/domain"
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

func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	details := slices.Clone(p)
	slices.SortStableFunc(details, func(a, b FieldError) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	msg := "the request is invalid"
	if len(details) > 1 {
		msg = "the request has several invalid fields"
	}
	return &ValidationError{Message: msg, Details: details}
}

func bodyError(message string) error {
	return &ValidationError{Message: "the request body is not a valid JSON object", Details: []FieldError{{Field: "body", Message: message}}}
}
