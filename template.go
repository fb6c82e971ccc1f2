// Package mediagen holds the deployment's own description, template.yaml,
// for the code that must agree with it at run time: the local runtime's
// cost meter names each route's function from it, and the local workflow
// gives each task its function's Timeout (read with package deploy's
// parser).
package mediagen

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Template is template.yaml as deployed.
//
//go:embed template.yaml
var Template []byte

// Route is one HttpApi event of a function of the template: the route API
// Gateway invokes the function for.
type Route struct {
	Method, Path string
	// Function is the function's folder under functions/ (FunctionFolder
	// of its logical ID).
	Function string
}

// Key is the route's key as API Gateway writes it ("GET /api/models").
func (r Route) Key() string { return r.Method + " " + r.Path }

// Routes is every HttpApi route of the template's functions, sorted by
// key. (It reads only the plain fields it needs; deploy's tests check it
// against the full reading of the template, intrinsics and Globals.)
func Routes() ([]Route, error) {
	var doc struct {
		Resources map[string]struct {
			Type       string `yaml:"Type"`
			Properties struct {
				Events map[string]struct {
					Type       string `yaml:"Type"`
					Properties struct {
						Method string `yaml:"Method"`
						Path   string `yaml:"Path"`
					} `yaml:"Properties"`
				} `yaml:"Events"`
			} `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(Template, &doc); err != nil {
		return nil, fmt.Errorf("template.yaml: %w", err)
	}
	var out []Route
	for id, r := range doc.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		for _, e := range r.Properties.Events {
			if e.Type == "HttpApi" {
				out = append(out, Route{Method: strings.ToUpper(e.Properties.Method), Path: e.Properties.Path, Function: FunctionFolder(id)})
			}
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Key(), b.Key()) })
	return out, nil
}

// FunctionFolder is the folder under functions/ of the function whose
// logical ID is id: the ID without "Function", in kebab case
// (GenerationEstimateFunction: generation-estimate). The Makefile's
// build-%Function rule derives it the same way.
func FunctionFolder(id string) string {
	name := strings.TrimSuffix(id, "Function")
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rune(name[i-1])) || unicode.IsDigit(rune(name[i-1]))) {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
