package dynamostore

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// stored is a record as its item holds it: when a part of it is kept
// apart (keptApart), that part is still to read.
type stored[R any] struct {
	rec   R
	apart bool
}

// keptApart is how a kind of record keeps a large part in an item of its
// own, keyed by the record's key and a suffix and written before the
// record (a generation's input, a long video's texts), and reads it back.
type keptApart[R any] struct {
	noun   string // the record in messages: "generation"
	part   string // the part in messages: "input"
	table  string
	key    string // the key attribute
	suffix string
	id     func(R) string
	join   func(R, map[string]types.AttributeValue) (R, error)
}

// get reads a record by id with its part (ErrNotFound for none, and for
// the id of a part's item).
func (k keptApart[R]) get(ctx context.Context, s *Store, id string, decode func(map[string]types.AttributeValue) (stored[R], error)) (R, error) {
	what := k.noun + " " + id
	if strings.Contains(id, "#") {
		var none R
		return none, fmt.Errorf("%s: %w", what, domain.ErrNotFound) // a part's key
	}
	l, err := getItem(ctx, s, k.table, k.key, id, what, decode)
	if err != nil || !l.apart {
		return l.rec, err
	}
	return getItem(ctx, s, k.table, k.key, id+k.suffix, what+" "+k.part,
		func(raw map[string]types.AttributeValue) (R, error) { return k.join(l.rec, raw) })
}

// joinAll reads the parts kept apart of the records stored, all in
// consistent batch reads (a part is written before its record, so a record
// read never lacks it).
func (k keptApart[R]) joinAll(ctx context.Context, s *Store, stored []stored[R]) ([]R, error) {
	var keys []string
	for _, l := range stored {
		if l.apart {
			keys = append(keys, k.id(l.rec)+k.suffix)
		}
	}
	parts, err := s.batchGet(ctx, k.table, k.key, keys, true)
	if err != nil {
		return nil, fmt.Errorf("read the %ss' %s: %w", k.noun, k.part, err)
	}
	out := make([]R, len(stored))
	for i, l := range stored {
		out[i] = l.rec
		if !l.apart {
			continue
		}
		raw, ok := parts[k.id(l.rec)+k.suffix]
		if !ok {
			return nil, fmt.Errorf("%s %s: its %s item is missing", k.noun, k.id(l.rec), k.part)
		}
		if out[i], err = k.join(l.rec, raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}
