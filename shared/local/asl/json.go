package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The runner keeps JSON as plain Go values: map[string]any, []any, string,
// bool, nil, and numbers as int64 when the text is an integer that fits,
// float64 otherwise, so that ids and counters keep their exact value.

// decodeJSON parses one JSON text.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return normalize(v), nil
}

// normalize turns the decoder's json.Number values into int64 or float64.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		return number(v.String())
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
		return v
	}
	return v
}

func number(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// encodeJSON renders v compactly, without the HTML escaping of
// json.Marshal, as Step Functions does.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// mustJSON renders a value that came from JSON, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := encodeJSON(v)
	if err != nil {
		return json.RawMessage(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}

// deepCopy copies maps and arrays so that the copy can be changed.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = deepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = deepCopy(e)
		}
		return c
	}
	return v
}

// toFloat reports a JSON number's value.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// toInt reports a JSON number that has an integer value.
func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}

func isNumber(v any) bool {
	_, ok := toFloat(v)
	return ok
}

// compareNumbers orders two JSON numbers, exactly when both are integers.
func compareNumbers(a, b any) int {
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	x, _ := toFloat(a)
	y, _ := toFloat(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// equalJSON compares two JSON values, numbers by value.
func equalJSON(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		return compareNumbers(a, b) == 0
	}
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		s, ok := b.(string)
		return ok && a == s
	case bool:
		x, ok := b.(bool)
		return ok && a == x
	case []any:
		y, ok := b.([]any)
		if !ok || len(a) != len(y) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(a) != len(y) {
			return false
		}
		for k, v := range a {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// typeName names a JSON value's type for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
