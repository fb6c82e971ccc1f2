package lambdastack

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"

	"github.com/mediagen-dev/mediagen/deploy"
)

// physical is what CloudFormation knows of a created resource: its Ref
// value and its attributes (Fn::GetAtt).
type physical struct {
	ref   string
	attrs map[string]string
}

// resolver resolves the expanded template's intrinsic functions as
// CloudFormation would for this stack: parameters (their defaults unless
// given) and conditions through deploy.Template, then Ref, Fn::GetAtt,
// Fn::Sub, Fn::Join and Fn::Select of the resources made here and the
// pseudo parameters.
type resolver struct {
	tmpl    *deploy.Template
	params  map[string]string
	pseudo  map[string]string
	created map[string]physical
}

func newResolver(doc map[string]any, stackName, region, account string, params map[string]string) (*resolver, error) {
	tmpl, err := deploy.FromDocument(doc)
	if err != nil {
		return nil, err
	}
	return &resolver{tmpl: tmpl, params: params, created: map[string]physical{},
		pseudo: map[string]string{"AWS::StackName": stackName, "AWS::Region": region, "AWS::AccountId": account,
			"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
			"AWS::StackId": fmt.Sprintf("arn:aws:cloudformation:%s:%s:stack/%s/local", region, account, stackName)}}, nil
}

// resolve returns v with every intrinsic function replaced by its value.
func (r *resolver) resolve(v any) (any, error) {
	v, err := r.tmpl.Evaluate(v, r.params)
	if err != nil {
		return nil, err
	}
	return r.walk(v)
}

// resolveString resolves v to a string.
func (r *resolver) resolveString(v any) (string, error) {
	out, err := r.resolve(v)
	if err != nil {
		return "", err
	}
	switch x := out.(type) {
	case string:
		return x, nil
	case nil:
		return "", nil
	case bool, int, float64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("%v is not a string", out)
}

func (r *resolver) walk(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			w, err := r.walk(e)
			if err != nil {
				return nil, err
			}
			out[i] = w
		}
		return out, nil
	case map[string]any:
		if deploy.IsIntrinsic(x) {
			for fn, arg := range x {
				return r.intrinsic(fn, arg)
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			w, err := r.walk(e)
			if err != nil {
				return nil, err
			}
			out[k] = w
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return r.ref(name)
	case "Fn::GetAtt":
		var parts []string
		switch a := arg.(type) {
		case []any:
			for _, p := range a {
				parts = append(parts, fmt.Sprint(p))
			}
		case string:
			parts = strings.SplitN(a, ".", 2)
		}
		if len(parts) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt %v", arg)
		}
		return r.getAtt(parts[0], parts[1])
	case "Fn::Sub":
		text, vars := "", map[string]any{}
		switch a := arg.(type) {
		case string:
			text = a
		case []any:
			if len(a) != 2 {
				return nil, fmt.Errorf("Fn::Sub %v", arg)
			}
			text, _ = a[0].(string)
			vars, _ = a[1].(map[string]any)
		}
		return r.sub(text, vars)
	case "Fn::Join":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Join %v", arg)
		}
		list, err := r.walk(a[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = fmt.Sprint(it)
		}
		return strings.Join(parts, fmt.Sprint(a[0])), nil
	case "Fn::Select":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Select %v", arg)
		}
		list, err := r.walk(a[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		var i int
		fmt.Sscan(fmt.Sprint(a[0]), &i)
		if i < 0 || i >= len(items) {
			return nil, fmt.Errorf("Fn::Select %d of %d items", i, len(items))
		}
		return items[i], nil
	}
	return nil, fmt.Errorf("%s: %w", fn, errNotModelled)
}

func (r *resolver) ref(name string) (string, error) {
	if v, ok := r.pseudo[name]; ok {
		return v, nil
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if p, ok := r.created[name]; ok {
		return p.ref, nil
	}
	return "", fmt.Errorf("Ref %s: a resource the local stack did not make (%w)", name, errNotModelled)
}

func (r *resolver) getAtt(name, attr string) (string, error) {
	p, ok := r.created[name]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: a resource the local stack did not make (%w)", name, attr, errNotModelled)
	}
	v, ok := p.attrs[attr]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: an attribute the local stack does not model (%w)", name, attr, errNotModelled)
	}
	return v, nil
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (r *resolver) sub(text string, vars map[string]any) (string, error) {
	var firstErr error
	out := subVar.ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}"
		}
		var (
			s   string
			err error
		)
		if v, ok := vars[name]; ok {
			var w any
			if w, err = r.resolve(v); err == nil {
				s = fmt.Sprint(w)
			}
		} else if res, attr, dotted := strings.Cut(name, "."); dotted && !strings.HasPrefix(name, "AWS::") {
			s, err = r.getAtt(res, attr)
		} else {
			s, err = r.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return s
	})
	return out, firstErr
}

// physicalName is a name as CloudFormation makes one for a resource the
// template does not name: the stack's name, the logical id and a random
// suffix, within max characters.
func physicalName(stack, logical string, max int, lower bool) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [12]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	suffix := string(b[:])
	head := stack + "-" + logical
	if len(head)+1+len(suffix) > max {
		head = head[:max-1-len(suffix)]
	}
	name := head + "-" + suffix
	if lower {
		name = strings.ToLower(name)
	}
	return name
}

// scalar is a template value as text: a whole number without an exponent
// (JSON numbers decode as float64).
func scalar(v any) string {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprint(v)
}
