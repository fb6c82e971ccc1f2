package generation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// InputObjects keeps the whole inputs too large for their record, in the
// output bucket under media.InputsPrefix, which no origin serves and
// whose lifecycle deletes them after media.InputRetentionDays.
type InputObjects interface {
	Put(ctx context.Context, key string, body io.Reader, contentType string) error
	// Get reads a whole object of at most maxBytes.
	Get(ctx context.Context, key string, maxBytes int64) ([]byte, error)
}

const (
	// inputInlineMax is the largest input holding data: URI images that
	// its record keeps whole. A larger one is written to the bucket once
	// and the record keeps it elided: a DynamoDB item holds at most 400
	// KB, and bills a write by the KB (an S3 PUT costs about what four
	// write units do, so past a few dozen KB the object is the cheaper).
	inputInlineMax = 64 << 10
	// maxInputBytes bounds the read of a whole input: the largest body
	// the API takes is about 6 MB.
	maxInputBytes = 8 << 20
	// elideOver is the shortest data: URI the record's copy elides.
	elideOver = 256
)

// recordInput is the input a generation's record keeps: the whole input,
// or, when it holds data: URI images and is over inputInlineMax with
// inputs set, its elided form, the whole input being written to the
// bucket first (key: media.InputKey, returned as object).
func recordInput(ctx context.Context, inputs InputObjects, uuid string, input json.RawMessage, fields map[string]any) (kept json.RawMessage, object string, err error) {
	if inputs == nil || len(input) <= inputInlineMax {
		return input, "", nil
	}
	key := media.InputKey(uuid)
	elided, shortened := elide(fields, key)
	if !shortened {
		return input, "", nil
	}
	kept, err = json.Marshal(elided)
	if err != nil {
		return nil, "", fmt.Errorf("encode the elided input: %w", err)
	}
	if err := inputs.Put(ctx, key, bytes.NewReader(input), "application/json"); err != nil {
		return nil, "", fmt.Errorf("keep the input in the bucket: %w", err)
	}
	return kept, key, nil
}

// elide copies an input with each data: URI longer than elideOver
// replaced by its header and its length, naming the object that holds it.
func elide(v any, key string) (any, bool) {
	switch x := v.(type) {
	case string:
		if len(x) <= elideOver || !strings.EqualFold(x[:5], "data:") {
			return x, false
		}
		header, _, _ := strings.Cut(x, ",")
		return fmt.Sprintf("%s,… (%d characters, kept in %s)", header, len(x), key), true
	case []any:
		out, shortened := make([]any, len(x)), false
		for i, e := range x {
			var short bool
			out[i], short = elide(e, key)
			shortened = shortened || short
		}
		return out, shortened
	case map[string]any:
		out, shortened := make(map[string]any, len(x)), false
		for k, e := range x {
			var short bool
			out[k], short = elide(e, key)
			shortened = shortened || short
		}
		return out, shortened
	}
	return v, false
}

// errNoInputObjects is a record whose input is in the bucket read where
// no bucket is wired.
var errNoInputObjects = errors.New("the input is kept in the bucket, which this function does not read")

// wholeInput is a recorded generation's whole input: the record's, or the
// object its record names.
func (s *Service) wholeInput(ctx context.Context, g domain.Generation) (json.RawMessage, error) {
	if g.InputObject == "" {
		return g.Input, nil
	}
	if s.Inputs == nil {
		return nil, fmt.Errorf("input of %s: %w", g.UUID, errNoInputObjects)
	}
	data, err := s.Inputs.Get(ctx, g.InputObject, maxInputBytes)
	if err != nil {
		return nil, fmt.Errorf("input of %s: %w", g.UUID, err)
	}
	return data, nil
}
