// Package deploy reads template.yaml the way CloudFormation does, so its
// tests can prove that the template, the code and the workflow agree.
package deploy

import (
	"fmt"
	"maps"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Template is a parsed SAM template with the short-form intrinsic tags
// resolved to their long form ({"Ref": x}, {"Fn::GetAtt": [r, a]}, ...).
type Template struct {
	Parameters map[string]any
	Globals    map[string]any
	Resources  map[string]Resource
	Outputs    map[string]any
}

// Resource is one resource with its properties and metadata.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Load reads and resolves a template file.
func Load(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	doc, err := resolve(root.Content[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, _ := doc.(map[string]any)
	t := &Template{Resources: map[string]Resource{}}
	t.Parameters, _ = m["Parameters"].(map[string]any)
	t.Globals, _ = m["Globals"].(map[string]any)
	t.Outputs, _ = m["Outputs"].(map[string]any)
	resources, _ := m["Resources"].(map[string]any)
	for name, r := range resources {
		rm, _ := r.(map[string]any)
		res := Resource{}
		res.Type, _ = rm["Type"].(string)
		res.Properties, _ = rm["Properties"].(map[string]any)
		res.Metadata, _ = rm["Metadata"].(map[string]any)
		if res.Properties == nil {
			res.Properties = map[string]any{}
		}
		if res.Type == "AWS::Serverless::Function" {
			res.Properties = withGlobals(globalsOf(t.Globals, "Function"), res.Properties)
		}
		t.Resources[name] = res
	}
	return t, nil
}

var tagNames = map[string]string{
	"!Ref": "Ref", "!GetAtt": "Fn::GetAtt", "!Sub": "Fn::Sub", "!Join": "Fn::Join", "!Select": "Fn::Select",
	"!Split": "Fn::Split", "!If": "Fn::If", "!Equals": "Fn::Equals", "!Not": "Fn::Not", "!And": "Fn::And",
	"!Or": "Fn::Or", "!FindInMap": "Fn::FindInMap", "!Base64": "Fn::Base64", "!GetAZs": "Fn::GetAZs",
	"!ImportValue": "Fn::ImportValue", "!Condition": "Condition", "!Cidr": "Fn::Cidr",
}

// resolve turns a YAML node into plain values, short-form tags into their
// long form.
func resolve(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			val, err := resolve(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = val
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
		return resolve(n.Alias)
	default:
		if strings.HasPrefix(n.Tag, "!!") {
			if err := n.Decode(&v); err != nil {
				return nil, err
			}
		} else {
			v = n.Value
		}
	}
	if long, ok := tagNames[n.Tag]; ok {
		if n.Tag == "!GetAtt" {
			if s, ok := v.(string); ok {
				res, attr, _ := strings.Cut(s, ".")
				v = []any{res, attr}
			}
		}
		return map[string]any{long: v}, nil
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
	}
	return v, nil
}

func globalsOf(globals map[string]any, kind string) map[string]any {
	g, _ := globals[kind].(map[string]any)
	return g
}

// withGlobals applies SAM's Globals: the resource's value wins, maps merge
// (the resource's keys over the globals'), lists are the resource's.
func withGlobals(globals, props map[string]any) map[string]any {
	out := maps.Clone(globals)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range props {
		gm, gok := out[k].(map[string]any)
		pm, pok := v.(map[string]any)
		if gok && pok {
			out[k] = withGlobals(gm, pm)
			continue
		}
		out[k] = v
	}
	return out
}
