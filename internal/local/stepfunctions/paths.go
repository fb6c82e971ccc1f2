package stepfunctions

import (
	"encoding/json"
	"fmt"
	"strings"
)

// lookup evaluates a path against input ("$...") or the context object
// ("$$..."). A path that can match several values answers their list.
func (x *run) lookup(p string, input any) (any, bool) {
	expr, err := compilePath(p)
	if err != nil {
		return nil, false
	}
	data := input
	if strings.HasPrefix(p, "$$") {
		data = x.ctxObj
	}
	if p == "$" || p == "$$" {
		return data, true
	}
	results := expr.Get(data)
	if indefinite(p) {
		if results == nil {
			results = []any{}
		}
		return results, true
	}
	if len(results) == 0 {
		return nil, false
	}
	return results[0], true
}

func indefinite(p string) bool {
	return strings.Contains(p, "*") || strings.Contains(p, "..") || strings.Contains(p, "?(") ||
		strings.Contains(p, ",") || strings.Contains(p, ":")
}

func (x *run) inputPath(st *state, input any) (any, error) {
	return x.selectPath(st.InputPath, input, "InputPath")
}

func (x *run) outputPath(st *state, output any) (any, error) {
	return x.selectPath(st.OutputPath, output, "OutputPath")
}

func (x *run) selectPath(raw json.RawMessage, data any, field string) (any, error) {
	if len(raw) == 0 {
		return data, nil
	}
	if string(raw) == "null" {
		return map[string]any{}, nil
	}
	var p string
	json.Unmarshal(raw, &p)
	v, ok := x.lookup(p, data)
	if !ok {
		return nil, &stateError{name: "States.Runtime", cause: fmt.Sprintf("%s %s matched nothing", field, p)}
	}
	return v, nil
}

// applyResultPath places result into a copy of input at the reference path.
func applyResultPath(raw json.RawMessage, input, result any) (any, error) {
	if len(raw) == 0 {
		return result, nil
	}
	if string(raw) == "null" {
		return input, nil
	}
	var p string
	json.Unmarshal(raw, &p)
	keys, err := referenceKeys(p)
	if err != nil {
		return nil, &stateError{name: "States.Runtime", cause: err.Error()}
	}
	if len(keys) == 0 {
		return result, nil
	}
	root, ok := deepCopy(input).(map[string]any)
	if !ok {
		return nil, &stateError{name: "States.Runtime", cause: fmt.Sprintf("ResultPath %s needs an object input", p)}
	}
	node := root
	for _, k := range keys[:len(keys)-1] {
		next, ok := node[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[k] = next
		}
		node = next
	}
	node[keys[len(keys)-1]] = result
	return root, nil
}

// template evaluates Parameters, ResultSelector and ItemSelector: keys ending
// in ".$" take a path's or an intrinsic function's value.
func (x *run) template(t any, input any) (any, error) {
	switch v := t.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			if !strings.HasSuffix(k, ".$") {
				res, err := x.template(val, input)
				if err != nil {
					return nil, err
				}
				out[k] = res
				continue
			}
			s := val.(string)
			key := strings.TrimSuffix(k, ".$")
			if strings.HasPrefix(s, "States.") {
				c, err := parseIntrinsic(s)
				if err != nil {
					return nil, &stateError{name: "States.Runtime", cause: err.Error()}
				}
				res, err := x.eval(c, input)
				if err != nil {
					return nil, err
				}
				out[key] = res
				continue
			}
			res, ok := x.lookup(s, input)
			if !ok {
				return nil, &stateError{name: "States.Runtime", cause: fmt.Sprintf("%s: path %s matched nothing", k, s)}
			}
			out[key] = deepCopy(res)
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, val := range v {
			res, err := x.template(val, input)
			if err != nil {
				return nil, err
			}
			out[i] = res
		}
		return out, nil
	}
	return t, nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[k] = deepCopy(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = deepCopy(val)
		}
		return out
	}
	return v
}
