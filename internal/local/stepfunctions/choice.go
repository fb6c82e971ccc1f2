package stepfunctions

import (
	"fmt"
	"strings"
	"time"
)

// comparison operators of Choice rules, by the kind of value they compare.
var (
	stringOps    = []string{"StringEquals", "StringLessThan", "StringGreaterThan", "StringLessThanEquals", "StringGreaterThanEquals"}
	numericOps   = []string{"NumericEquals", "NumericLessThan", "NumericGreaterThan", "NumericLessThanEquals", "NumericGreaterThanEquals"}
	timestampOps = []string{"TimestampEquals", "TimestampLessThan", "TimestampGreaterThan", "TimestampLessThanEquals", "TimestampGreaterThanEquals"}
	typeTests    = []string{"IsPresent", "IsNull", "IsString", "IsNumeric", "IsBoolean", "IsTimestamp"}
)

func operators() []string {
	var ops []string
	for _, group := range [][]string{stringOps, numericOps, timestampOps} {
		for _, op := range group {
			ops = append(ops, op, op+"Path")
		}
	}
	ops = append(ops, "BooleanEquals", "BooleanEqualsPath", "StringMatches")
	return append(ops, typeTests...)
}

// checkRule checks one Choice rule; top says it carries Next.
func checkRule(r map[string]any, top bool) error {
	for k := range r {
		if k == "Next" && top || k == "Comment" {
			continue
		}
		switch k {
		case "And", "Or":
			list, ok := r[k].([]any)
			if !ok || len(list) == 0 {
				return fmt.Errorf("choice %s needs a list of rules", k)
			}
			for _, sub := range list {
				m, ok := sub.(map[string]any)
				if !ok {
					return fmt.Errorf("choice %s holds a non-rule", k)
				}
				if err := checkRule(m, false); err != nil {
					return err
				}
			}
		case "Not":
			m, ok := r[k].(map[string]any)
			if !ok {
				return fmt.Errorf("choice Not needs a rule")
			}
			if err := checkRule(m, false); err != nil {
				return err
			}
		case "Variable":
			if v, _ := r[k].(string); v == "" {
				return fmt.Errorf("choice Variable must be a path")
			} else if _, err := compilePath(v); err != nil {
				return err
			}
		default:
			known := false
			for _, op := range operators() {
				known = known || op == k
			}
			if !known {
				return fmt.Errorf("unsupported choice operator %q", k)
			}
			if _, ok := r["Variable"]; !ok {
				return fmt.Errorf("choice operator %s needs a Variable", k)
			}
		}
	}
	return nil
}

// matches evaluates a rule against the Choice state's input.
func (x *run) matches(r map[string]any, input any) (bool, error) {
	if list, ok := r["And"].([]any); ok {
		for _, sub := range list {
			if ok, err := x.matches(sub.(map[string]any), input); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	}
	if list, ok := r["Or"].([]any); ok {
		for _, sub := range list {
			if ok, err := x.matches(sub.(map[string]any), input); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	if sub, ok := r["Not"].(map[string]any); ok {
		ok, err := x.matches(sub, input)
		return !ok, err
	}
	variable, _ := r["Variable"].(string)
	value, present := x.lookup(variable, input)
	for op, want := range r {
		if op == "Variable" || op == "Next" || op == "Comment" {
			continue
		}
		if strings.HasSuffix(op, "Path") {
			p, _ := want.(string)
			v, ok := x.lookup(p, input)
			if !ok {
				return false, &stateError{name: "States.Runtime", cause: fmt.Sprintf("choice path %s matched nothing", p)}
			}
			op, want = strings.TrimSuffix(op, "Path"), v
		}
		switch op {
		case "IsPresent":
			return present == want.(bool), nil
		}
		if !present {
			// A missing variable is a runtime error, except under IsPresent.
			return false, &stateError{name: "States.Runtime", cause: fmt.Sprintf("choice variable %s matched nothing", variable)}
		}
		return compare(op, value, want), nil
	}
	return false, nil
}

func compare(op string, value, want any) bool {
	switch op {
	case "IsNull":
		return (value == nil) == want.(bool)
	case "IsString":
		_, ok := value.(string)
		return ok == want.(bool)
	case "IsNumeric":
		_, ok := value.(float64)
		return ok == want.(bool)
	case "IsBoolean":
		_, ok := value.(bool)
		return ok == want.(bool)
	case "IsTimestamp":
		_, ok := timestamp(value)
		return ok == want.(bool)
	case "BooleanEquals":
		b, ok := value.(bool)
		return ok && b == want
	case "StringMatches":
		s, ok := value.(string)
		pattern, _ := want.(string)
		return ok && globMatch(pattern, s)
	}
	switch {
	case strings.HasPrefix(op, "String"):
		a, ok1 := value.(string)
		b, ok2 := want.(string)
		return ok1 && ok2 && ordered(op, strings.Compare(a, b))
	case strings.HasPrefix(op, "Numeric"):
		a, ok1 := value.(float64)
		b, ok2 := want.(float64)
		c := 0
		if a < b {
			c = -1
		} else if a > b {
			c = 1
		}
		return ok1 && ok2 && ordered(op, c)
	case strings.HasPrefix(op, "Timestamp"):
		a, ok1 := timestamp(value)
		b, ok2 := timestamp(want)
		return ok1 && ok2 && ordered(op, a.Compare(b))
	}
	return false
}

func ordered(op string, c int) bool {
	switch {
	case strings.HasSuffix(op, "LessThanEquals"):
		return c <= 0
	case strings.HasSuffix(op, "GreaterThanEquals"):
		return c >= 0
	case strings.HasSuffix(op, "LessThan"):
		return c < 0
	case strings.HasSuffix(op, "GreaterThan"):
		return c > 0
	}
	return c == 0
}

func timestamp(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// globMatch is StringMatches: * matches any run of characters; \* and \\
// are literal.
func globMatch(pattern, s string) bool {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\' && i+1 < len(pattern):
			i++
			b.WriteByte(pattern[i])
		case c == '*':
			b.WriteString("\x00")
		default:
			b.WriteByte(c)
		}
	}
	parts := strings.Split(b.String(), "\x00")
	if len(parts) == 1 {
		return s == parts[0]
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
