package deploy

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// dependencies is what each resource waits for when CloudFormation creates
// the stack: the resources its properties name (Ref, Fn::GetAtt, Fn::Sub),
// Globals included, and the edges the SAM transform adds. A function's
// Events become resources of their own (permissions, event source
// mappings), so they do not make the function wait; but an HttpApi event
// puts the function's ARN into the API's integration, so the API waits for
// the function.
func dependencies(tpl *Template) map[string][]string {
	deps := map[string][]string{}
	add := func(from, to string) {
		if _, ok := tpl.Resources[to]; ok && to != from && !slices.Contains(deps[from], to) {
			deps[from] = append(deps[from], to)
		}
	}
	for name, r := range tpl.Resources {
		for k, v := range r.Properties {
			if r.Type == "AWS::Serverless::Function" && k == "Events" {
				continue
			}
			walk(v, name, func(_ string, m map[string]any) {
				if x, ok := ref(m); ok {
					add(name, x)
				}
				if x, _, ok := getAtt(m); ok {
					add(name, x)
				}
				if text, vars, ok := sub(m); ok {
					for _, ph := range placeholders(text) {
						if _, bound := vars[ph]; !bound {
							res, _, _ := strings.Cut(ph, ".")
							add(name, res)
						}
					}
				}
			})
		}
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		events, _ := r.Properties["Events"].(map[string]any)
		for _, e := range events {
			em, _ := e.(map[string]any)
			p, _ := em["Properties"].(map[string]any)
			if api, ok := ref(p["ApiId"]); ok && em["Type"] == "HttpApi" {
				add(api, name)
			}
		}
	}
	for name := range deps {
		sort.Strings(deps[name])
	}
	return deps
}

// cycle finds one circular dependency, as the path that closes it.
func cycle(deps map[string][]string) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = open
		path = append(path, n)
		for _, d := range deps[n] {
			switch state[d] {
			case open:
				return append(slices.Clone(path[slices.Index(path, d):]), d)
			case unseen:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	names := sortedKeys(deps)
	for _, n := range names {
		if state[n] == unseen {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// TestNoCircularDependency: CloudFormation refuses a template whose
// resources wait for each other. The trap is the API's own URL: a route
// function that names HttpApi (say !Sub https://${HttpApi}.execute-api...)
// waits for the API, which waits for the function it integrates; hence
// PUBLIC_BASE_URL is the PublicBaseUrl parameter.
func TestNoCircularDependency(t *testing.T) {
	if c := cycle(dependencies(tmpl(t))); c != nil {
		t.Errorf("circular dependency: %s (CloudFormation refuses the stack)", strings.Join(c, " -> "))
	}
}

func TestCycleFindsTheAPIsOwnURLInARouteFunction(t *testing.T) {
	doc, err := Parse([]byte(`
Resources:
  HttpApi:
    Type: AWS::Serverless::HttpApi
  Queue:
    Type: AWS::SQS::Queue
  RouteFunction:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          QUEUE: !Ref Queue
          BASE: !Sub https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}
      Events:
        Get:
          Type: HttpApi
          Properties: {ApiId: !Ref HttpApi, Method: GET, Path: /x}
  Consumer:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          BASE: !Sub https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}
`))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := FromDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := cycle(dependencies(tpl))
	if want := []string{"HttpApi", "RouteFunction", "HttpApi"}; !slices.Equal(got, want) {
		t.Errorf("cycle = %v, want %v", got, want)
	}
	// A function that is no route of the API may name it.
	delete(tpl.Resources, "RouteFunction")
	if got := cycle(dependencies(tpl)); got != nil {
		t.Errorf("cycle = %v without the route function, want none", got)
	}
}
