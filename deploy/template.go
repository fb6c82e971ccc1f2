// Package deploy reads template.yaml the way CloudFormation and the SAM
// transform do, so its tests can prove that the template, the code and the
// workflow definition agree (go test ./deploy/).
package deploy

import (
	"fmt"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Template is a parsed SAM template: short-form intrinsic tags are in their
// long form ({"Ref": x}, {"Fn::GetAtt": [r, a]}, {"Fn::Sub": s}, ...), and
// every resource's Properties already carry the Globals of its type.
type Template struct {
	Parameters map[string]any
	Mappings   map[string]any
	Conditions map[string]any
	Globals    map[string]any
	Resources  map[string]Resource
	Outputs    map[string]any
}

// Resource is one entry of Resources.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
	// Condition is the condition the resource is created under ("": always).
	Condition string
	// DeletionPolicy and UpdateReplacePolicy are the resource's attributes
	// ("": CloudFormation's default, Delete).
	DeletionPolicy, UpdateReplacePolicy string
	// Declared is Properties as written, before Globals.
	Declared map[string]any
}

// globalsSection names the Globals section of each SAM resource type.
var globalsSection = map[string]string{
	"AWS::Serverless::Function":     "Function",
	"AWS::Serverless::HttpApi":      "HttpApi",
	"AWS::Serverless::Api":          "Api",
	"AWS::Serverless::StateMachine": "StateMachine",
	"AWS::Serverless::SimpleTable":  "SimpleTable",
}

// Load reads a template file, resolves its tags and applies Globals.
func Load(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return FromDocument(doc)
}

// Parse turns YAML into plain values (map[string]any, []any, string, int,
// bool, float64, nil), with the short-form intrinsic tags in long form.
func Parse(raw []byte) (any, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("empty document")
	}
	return resolve(root.Content[0])
}

// FromDocument splits a parsed template into its sections.
func FromDocument(doc any) (*Template, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the template is not a mapping")
	}
	t := &Template{Resources: map[string]Resource{}}
	t.Parameters, _ = m["Parameters"].(map[string]any)
	t.Mappings, _ = m["Mappings"].(map[string]any)
	t.Conditions, _ = m["Conditions"].(map[string]any)
	t.Globals, _ = m["Globals"].(map[string]any)
	t.Outputs, _ = m["Outputs"].(map[string]any)
	resources, ok := m["Resources"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no Resources section")
	}
	for name, r := range resources {
		rm, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("resource %s is not a mapping", name)
		}
		res := Resource{}
		res.Type, _ = rm["Type"].(string)
		res.Declared, _ = rm["Properties"].(map[string]any)
		res.Metadata, _ = rm["Metadata"].(map[string]any)
		res.Condition, _ = rm["Condition"].(string)
		res.DeletionPolicy, _ = rm["DeletionPolicy"].(string)
		res.UpdateReplacePolicy, _ = rm["UpdateReplacePolicy"].(string)
		if res.Declared == nil {
			res.Declared = map[string]any{}
		}
		res.Properties = res.Declared
		if section, ok := globalsSection[res.Type]; ok {
			if g, ok := t.Globals[section].(map[string]any); ok {
				res.Properties = MergeGlobals(g, res.Declared).(map[string]any)
			}
		}
		t.Resources[name] = res
	}
	return t, nil
}

// LambdaDefaultTimeout is a function's Timeout when neither it nor the
// Globals set one (Lambda's default, 3 s).
const LambdaDefaultTimeout = 3 * time.Second

// FunctionTimeout is the Timeout of the function id: its own, else the
// Globals', else Lambda's default.
func (t *Template) FunctionTimeout(id string) (time.Duration, error) {
	r, ok := t.Resources[id]
	if !ok || (r.Type != "AWS::Serverless::Function" && r.Type != "AWS::Lambda::Function") {
		return 0, fmt.Errorf("%s is not a function of the template", id)
	}
	v, ok := r.Properties["Timeout"]
	if !ok {
		return LambdaDefaultTimeout, nil
	}
	switch n := v.(type) {
	case int:
		if n > 0 {
			return time.Duration(n) * time.Second, nil
		}
	case float64:
		if n > 0 && n == float64(int(n)) {
			return time.Duration(n) * time.Second, nil
		}
	}
	return 0, fmt.Errorf("%s: Timeout %v is not a whole positive number of seconds", id, v)
}

// shortTags maps CloudFormation's short-form tags to their long form.
var shortTags = map[string]string{
	"!Ref": "Ref", "!GetAtt": "Fn::GetAtt", "!Sub": "Fn::Sub", "!Join": "Fn::Join", "!Select": "Fn::Select",
	"!Split": "Fn::Split", "!If": "Fn::If", "!Equals": "Fn::Equals", "!Not": "Fn::Not", "!And": "Fn::And",
	"!Or": "Fn::Or", "!FindInMap": "Fn::FindInMap", "!Base64": "Fn::Base64", "!GetAZs": "Fn::GetAZs",
	"!ImportValue": "Fn::ImportValue", "!Condition": "Condition", "!Cidr": "Fn::Cidr",
	"!Transform": "Fn::Transform", "!ToJsonString": "Fn::ToJsonString", "!Length": "Fn::Length",
}

func resolve(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: YAML merge keys (<<) are not CloudFormation", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q (the first one would be lost)", k.Line, k.Value)
			}
			val, err := resolve(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		v = m
	case yaml.SequenceNode:
		list := []any{}
		for _, c := range n.Content {
			val, err := resolve(c)
			if err != nil {
				return nil, err
			}
			list = append(list, val)
		}
		v = list
	case yaml.AliasNode:
		return nil, fmt.Errorf("line %d: YAML aliases (*%s) are not CloudFormation", n.Line, n.Value)
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!!") {
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
		} else {
			v = n.Value // a tagged scalar (!Ref x, !Sub "...") is a string
		}
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v, nil
	}
	long, ok := shortTags[n.Tag]
	if !ok {
		return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
	}
	if n.Tag == "!GetAtt" {
		if s, ok := v.(string); ok {
			res, attr, found := strings.Cut(s, ".")
			if !found {
				return nil, fmt.Errorf("line %d: !GetAtt %s has no attribute", n.Line, s)
			}
			v = []any{res, attr}
		}
	}
	return map[string]any{long: v}, nil
}

// IsIntrinsic reports whether v is an intrinsic function ({"Ref": ...} or
// {"Fn::...": ...}); SAM's Globals treat one as a single value, not a map.
func IsIntrinsic(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for k := range m {
		return k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::")
	}
	return false
}

// MergeGlobals applies a Globals value under a resource's value as the SAM
// transform does: a value the resource sets replaces the global one, maps
// (not intrinsic functions) merge key by key, and lists add up, the global
// entries first. Values of different kinds: the resource's wins.
func MergeGlobals(global, local any) any {
	gm, gMap := global.(map[string]any)
	lm, lMap := local.(map[string]any)
	if gMap && lMap && !IsIntrinsic(gm) && !IsIntrinsic(lm) {
		out := make(map[string]any, len(gm)+len(lm))
		for k, v := range gm {
			out[k] = v
		}
		for k, v := range lm {
			if g, ok := gm[k]; ok {
				out[k] = MergeGlobals(g, v)
			} else {
				out[k] = v
			}
		}
		return out
	}
	gl, gList := global.([]any)
	ll, lList := local.([]any)
	if gList && lList {
		return append(append([]any{}, gl...), ll...)
	}
	return local
}

// noValue stands for AWS::NoValue while Evaluate works: the key or list
// entry holding it is dropped.
type noValue struct{}

// Evaluate resolves v as CloudFormation would for a deployment with the
// given parameter values (a parameter not given takes its Default): Ref of
// a parameter, Fn::If on the Conditions, Fn::Equals, Fn::Not, Fn::And,
// Fn::Or and Fn::FindInMap; AWS::NoValue removes its key. Other intrinsic
// functions (Ref of a resource, Fn::GetAtt, Fn::Sub) stay as they are.
func (t *Template) Evaluate(v any, params map[string]string) (any, error) {
	out, err := t.eval(v, params)
	if _, ok := out.(noValue); ok {
		return nil, err
	}
	return out, err
}

// Condition evaluates the named condition for the given parameter values.
func (t *Template) Condition(name string, params map[string]string) (bool, error) {
	c, ok := t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("no condition %s", name)
	}
	v, err := t.eval(c, params)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is %v, not a boolean", name, v)
	}
	return b, nil
}

func (t *Template) eval(v any, params map[string]string) (any, error) {
	switch x := v.(type) {
	case []any:
		out := []any{}
		for _, e := range x {
			r, err := t.eval(e, params)
			if err != nil {
				return nil, err
			}
			if _, drop := r.(noValue); !drop {
				out = append(out, r)
			}
		}
		return out, nil
	case map[string]any:
		if !IsIntrinsic(x) {
			out := map[string]any{}
			for k, e := range x {
				r, err := t.eval(e, params)
				if err != nil {
					return nil, err
				}
				if _, drop := r.(noValue); !drop {
					out[k] = r
				}
			}
			return out, nil
		}
		for fn, arg := range x {
			return t.intrinsic(fn, arg, params)
		}
	}
	return v, nil
}

func (t *Template) intrinsic(fn string, arg any, params map[string]string) (any, error) {
	list, _ := arg.([]any)
	args := func(n int) ([]any, error) {
		if len(list) != n {
			return nil, fmt.Errorf("%s takes %d arguments: %v", fn, n, arg)
		}
		out := make([]any, n)
		for i, a := range list {
			r, err := t.eval(a, params)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		if name == "AWS::NoValue" {
			return noValue{}, nil
		}
		if val, ok := params[name]; ok {
			return val, nil
		}
		if p, ok := t.Parameters[name].(map[string]any); ok {
			if d, ok := p["Default"]; ok {
				return fmt.Sprint(d), nil
			}
			return nil, fmt.Errorf("parameter %s has no Default and no value was given", name)
		}
		return map[string]any{"Ref": arg}, nil // a resource or pseudo parameter
	case "Condition":
		name, _ := arg.(string)
		return t.Condition(name, params)
	case "Fn::If":
		if len(list) != 3 {
			return nil, fmt.Errorf("Fn::If takes [condition, then, else]: %v", arg)
		}
		name, _ := list[0].(string)
		c, err := t.Condition(name, params)
		if err != nil {
			return nil, err
		}
		if c {
			return t.eval(list[1], params)
		}
		return t.eval(list[2], params)
	case "Fn::Equals":
		a, err := args(2)
		if err != nil {
			return nil, err
		}
		return fmt.Sprint(a[0]) == fmt.Sprint(a[1]), nil
	case "Fn::Not":
		a, err := args(1)
		if err != nil {
			return nil, err
		}
		b, ok := a[0].(bool)
		if !ok {
			return nil, fmt.Errorf("Fn::Not of %v", a[0])
		}
		return !b, nil
	case "Fn::And", "Fn::Or":
		a, err := args(len(list))
		if err != nil {
			return nil, err
		}
		acc := fn == "Fn::And"
		for _, e := range a {
			b, ok := e.(bool)
			if !ok {
				return nil, fmt.Errorf("%s of %v", fn, e)
			}
			if fn == "Fn::And" {
				acc = acc && b
			} else {
				acc = acc || b
			}
		}
		return acc, nil
	case "Fn::FindInMap":
		a, err := args(3)
		if err != nil {
			return nil, err
		}
		m, _ := t.Mappings[fmt.Sprint(a[0])].(map[string]any)
		top, _ := m[fmt.Sprint(a[1])].(map[string]any)
		val, ok := top[fmt.Sprint(a[2])]
		if !ok {
			return nil, fmt.Errorf("Fn::FindInMap %v: no such entry in Mappings", a)
		}
		return val, nil
	}
	return map[string]any{fn: arg}, nil
}
