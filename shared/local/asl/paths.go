package asl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/ohler55/ojg/jp"
)

// path is a compiled Path: "$..." applies to the state's data, "$$..." to
// the context object.
type path struct {
	src      string
	context  bool
	expr     jp.Expr
	definite bool // a Reference Path: it names at most one node
}

// compilePath parses a Path. ojg's dot notation stops at characters such
// as "-" that JsonPath (and so Step Functions) allows in field names, so
// dotted names are rewritten in bracket form first.
func compilePath(src string) (*path, error) {
	p := &path{src: src}
	s := src
	if strings.HasPrefix(s, "$$") {
		p.context = true
		s = s[1:]
	}
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("path %q does not begin with \"$\"", src)
	}
	norm, err := bracketed(s)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", src, err)
	}
	x, err := jp.ParseString(norm)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", src, err)
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("path %q is empty", src)
	}
	if _, ok := x[0].(jp.Root); !ok {
		return nil, fmt.Errorf("path %q does not begin with \"$\"", src)
	}
	p.expr = x
	p.definite = true
	for _, f := range x[1:] {
		switch f.(type) {
		case jp.Child, jp.Nth:
		default:
			p.definite = false
		}
	}
	return p, nil
}

// compileReference parses a Reference Path: one that names a single node.
func compileReference(src string) (*path, error) {
	p, err := compilePath(src)
	if err != nil {
		return nil, err
	}
	if !p.definite {
		return nil, fmt.Errorf("%q is not a reference path (only .field and [index] are allowed)", src)
	}
	return p, nil
}

// bracketed rewrites the dotted field names of a path ("$.a-b.c") in
// bracket notation ("$['a-b']['c']"); brackets are copied as they are.
// A backslash in a dotted name escapes the next character.
func bracketed(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('$')
	i := 1
	for i < len(s) {
		switch s[i] {
		case '[':
			end, err := closingBracket(s, i)
			if err != nil {
				return "", err
			}
			b.WriteString(s[i : end+1])
			i = end + 1
		case '.':
			i++
			descent := i < len(s) && s[i] == '.'
			if descent {
				b.WriteString("..")
				i++
			}
			if i < len(s) && s[i] == '*' {
				if !descent {
					b.WriteByte('.')
				}
				b.WriteByte('*')
				i++
				continue
			}
			if descent && i < len(s) && s[i] == '[' {
				continue
			}
			name, n, err := dottedName(s[i:])
			if err != nil {
				return "", err
			}
			i += n
			b.WriteString("['")
			b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name))
			b.WriteString("']")
		default:
			return "", fmt.Errorf("unexpected %q at offset %d", s[i], i)
		}
	}
	return b.String(), nil
}

// dottedName reads a field name up to the next unescaped "." or "[".
func dottedName(s string) (string, int, error) {
	var name []rune
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '.' || c == '[' {
			break
		}
		if c == '\\' {
			if i+1 >= len(s) {
				return "", 0, errors.New("dangling backslash")
			}
			if s[i+1] == 'u' && i+6 <= len(s) {
				if r, n, ok := unicodeEscape(s[i:]); ok {
					name = append(name, r)
					i += n
					continue
				}
			}
			r, size := decodeRune(s[i+1:])
			name = append(name, r)
			i += 1 + size
			continue
		}
		r, size := decodeRune(s[i:])
		if unicode.IsSpace(r) {
			return "", 0, fmt.Errorf("white space in field name at offset %d", i)
		}
		name = append(name, r)
		i += size
	}
	if len(name) == 0 {
		return "", 0, errors.New("empty field name")
	}
	return string(name), i, nil
}

// unicodeEscape reads \uXXXX, or a \uXXXX\uXXXX surrogate pair.
func unicodeEscape(s string) (rune, int, bool) {
	hex := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(s[2:6], 16, 16)
		return rune(n), err == nil
	}
	r, ok := hex(s)
	if !ok {
		return 0, 0, false
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex(s[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
				return d, 12, true
			}
		}
	}
	return r, 6, true
}

func decodeRune(s string) (rune, int) {
	for i, r := range s {
		if i == 0 {
			return r, len(string(r))
		}
	}
	return 0, 0
}

// closingBracket finds the "]" closing the "[" at s[open], skipping quoted
// strings and nested brackets and parentheses (filters).
func closingBracket(s string, open int) (int, error) {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
			if depth == 0 {
				if c != ']' {
					return 0, fmt.Errorf("unbalanced %q at offset %d", c, i)
				}
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("unterminated \"[\" at offset %d", open)
}

// get applies the path. A Reference Path yields its node and whether it
// exists; any other path yields the array of everything it matched, as the
// spec says.
func (p *path) get(data any, c *contextObject) (any, bool) {
	if p.context {
		data = c.value()
	}
	found := p.expr.Get(data)
	if !p.definite {
		if found == nil {
			found = []any{}
		}
		return found, true
	}
	if len(found) == 0 {
		return nil, false
	}
	return found[0], true
}

// optionalPath is InputPath or OutputPath: "$" when absent, and null
// discards the data for an empty object.
type optionalPath struct {
	null bool
	p    *path
}

func (o optionalPath) apply(data any, c *contextObject, field string) (any, error) {
	if o.null {
		return map[string]any{}, nil
	}
	if o.p == nil {
		return data, nil
	}
	v, ok := o.p.get(data, c)
	if !ok {
		return nil, runtimeError("Invalid path '%s' : The %s could not be applied to the state's input %s", o.p.src, field, clip(data))
	}
	return v, nil
}

// resultPath is a state's (or catcher's) ResultPath: where its result goes
// in its raw input.
type resultPath struct {
	null  bool
	src   string
	steps []jp.Frag // jp.Child or jp.Nth, after "$"
}

func compileResultPath(src string) (resultPath, error) {
	if strings.HasPrefix(src, "$$") {
		return resultPath{}, fmt.Errorf("ResultPath %q may not address the context object", src)
	}
	p, err := compileReference(src)
	if err != nil {
		return resultPath{}, err
	}
	return resultPath{src: src, steps: p.expr[1:]}, nil
}

// apply places result in a copy of input, creating missing objects on the
// way, as the spec's "$.master.result.sum" example does.
func (r resultPath) apply(input, result any) (any, error) {
	if r.null {
		return input, nil
	}
	if len(r.steps) == 0 {
		return result, nil
	}
	root := deepCopy(input)
	fail := func() error {
		return &failure{Name: ErrResultPathMatchFailure, Cause: fmt.Sprintf("Unable to apply ResultPath %q to input %s", r.src, clip(input))}
	}
	cur := root
	for i, step := range r.steps {
		last := i == len(r.steps)-1
		switch s := step.(type) {
		case jp.Child:
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, fail()
			}
			if last {
				obj[string(s)] = result
				break
			}
			next, ok := obj[string(s)]
			if !ok || next == nil {
				next = map[string]any{}
				obj[string(s)] = next
			}
			cur = next
		case jp.Nth:
			arr, ok := cur.([]any)
			n := int(s)
			if n < 0 {
				n += len(arr)
			}
			if !ok || n < 0 || n >= len(arr) {
				return nil, fail()
			}
			if last {
				arr[n] = result
				break
			}
			cur = arr[n]
		}
	}
	return root, nil
}

// clip renders data for an error message, shortened.
func clip(v any) string {
	s := string(mustJSON(v))
	if len(s) > 256 {
		s = s[:256] + "..."
	}
	return s
}
