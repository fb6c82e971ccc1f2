package stepfunctions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// call is a parsed intrinsic function call.
type call struct {
	name string
	args []any // string literal, float64, path (pathArg) or *call
}

type pathArg string

// parseIntrinsic parses "States.Fn(arg, ...)", refusing unknown functions.
func parseIntrinsic(s string) (*call, error) {
	c, rest, err := parseCall(strings.TrimSpace(s))
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(rest) != "" {
		return nil, fmt.Errorf("intrinsic %q has text after its call", s)
	}
	return c, nil
}

func parseCall(s string) (*call, string, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return nil, "", fmt.Errorf("intrinsic %q has no argument list", s)
	}
	c := &call{name: strings.TrimSpace(s[:open])}
	if !slices.Contains(intrinsics, c.name) {
		return nil, "", fmt.Errorf("unsupported intrinsic function %q (supported: %s)", c.name, strings.Join(intrinsics, ", "))
	}
	s = strings.TrimSpace(s[open+1:])
	for {
		if strings.HasPrefix(s, ")") {
			return c, s[1:], nil
		}
		var arg any
		switch {
		case strings.HasPrefix(s, "'"):
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, "", fmt.Errorf("unterminated string in %s", c.name)
			}
			arg, s = b.String(), s[i+1:]
		case strings.HasPrefix(s, "States."):
			sub, rest, err := parseCall(s)
			if err != nil {
				return nil, "", err
			}
			arg, s = sub, rest
		default:
			end := strings.IndexAny(s, ",)")
			if end < 0 {
				return nil, "", fmt.Errorf("unterminated argument list in %s", c.name)
			}
			tok := strings.TrimSpace(s[:end])
			if strings.HasPrefix(tok, "$") {
				if _, err := compilePath(tok); err != nil {
					return nil, "", err
				}
				arg = pathArg(tok)
			} else if f, err := strconv.ParseFloat(tok, 64); err == nil {
				arg = f
			} else if tok == "null" {
				arg = nil
			} else {
				return nil, "", fmt.Errorf("bad argument %q in %s", tok, c.name)
			}
			s = s[end:]
		}
		c.args = append(c.args, arg)
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, ",") {
			s = strings.TrimSpace(s[1:])
		}
	}
}

// eval runs a call against the input.
func (x *run) eval(c *call, input any) (any, error) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		switch v := a.(type) {
		case pathArg:
			val, ok := x.lookup(string(v), input)
			if !ok {
				return nil, &stateError{name: "States.Runtime", cause: fmt.Sprintf("%s: path %s matched nothing", c.name, v)}
			}
			args[i] = val
		case *call:
			val, err := x.eval(v, input)
			if err != nil {
				return nil, err
			}
			args[i] = val
		default:
			args[i] = v
		}
	}
	bad := func(msg string) error {
		return &stateError{name: "States.IntrinsicFailure", cause: c.name + ": " + msg}
	}
	switch c.name {
	case "States.Format":
		tmpl, ok := args[0].(string)
		if !ok {
			return nil, bad("the template must be a string")
		}
		var b strings.Builder
		next := 1
		for i := 0; i < len(tmpl); i++ {
			switch {
			case tmpl[i] == '\\' && i+1 < len(tmpl):
				i++
				b.WriteByte(tmpl[i])
			case strings.HasPrefix(tmpl[i:], "{}"):
				if next >= len(args) {
					return nil, bad("more {} than arguments")
				}
				switch v := args[next].(type) {
				case string:
					b.WriteString(v)
				default:
					raw, _ := json.Marshal(v)
					b.Write(raw)
				}
				next++
				i++
			default:
				b.WriteByte(tmpl[i])
			}
		}
		return b.String(), nil
	case "States.StringToJson":
		s, ok := args[0].(string)
		var v any
		if !ok || json.Unmarshal([]byte(s), &v) != nil {
			return nil, bad("the argument is not a JSON string")
		}
		return v, nil
	case "States.JsonToString":
		raw, err := json.Marshal(args[0])
		if err != nil {
			return nil, bad(err.Error())
		}
		return string(raw), nil
	case "States.Array":
		return args, nil
	case "States.ArrayLength":
		list, ok := args[0].([]any)
		if !ok {
			return nil, bad("the argument is not an array")
		}
		return float64(len(list)), nil
	case "States.MathAdd":
		a, ok1 := args[0].(float64)
		b, ok2 := args[1].(float64)
		if !ok1 || !ok2 {
			return nil, bad("the arguments must be numbers")
		}
		return a + b, nil
	case "States.UUID":
		return uuid.NewString(), nil
	}
	return nil, bad("not implemented")
}
