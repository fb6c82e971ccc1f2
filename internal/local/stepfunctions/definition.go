// Package stepfunctions runs an Amazon States Language definition locally:
// the local runtime and the tests execute statemachines/long-story.asl.json
// itself with it, in place of AWS Step Functions. It implements the part of
// the language the service's workflow and its tests need (Task, Pass,
// Choice, Wait, Succeed, Fail, Parallel, inline Map; the input and output
// paths; Retry and Catch; a few intrinsic functions; Lambda tasks, direct
// or through lambda:invoke and lambda:invoke.waitForTaskToken with task
// tokens and heartbeats) and refuses anything else when the definition is
// loaded, naming the state. It holds executions to the service's hard
// quotas: 256 KiB payloads and 25,000 history events (limits.go). It runs a
// task's function as Step Functions runs a Lambda invocation: never
// cancelled by the execution (a state's timeout, a failed branch, a stop),
// its late result discarded, and past its function's own timeout
// (Config.FunctionTimeouts) reported as Sandbox.Timedout (run.go, invoke).
package stepfunctions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ohler55/ojg/jp"
)

// machineDef is a States scope: the top level, a Parallel branch or a Map
// processor.
type machineDef struct {
	Comment         string                     `json:"Comment"`
	StartAt         string                     `json:"StartAt"`
	States          map[string]json.RawMessage `json:"States"`
	TimeoutSeconds  int                        `json:"TimeoutSeconds"`
	Version         string                     `json:"Version"`
	ProcessorConfig *processorConfig           `json:"ProcessorConfig"`
	QueryLanguage   string                     `json:"QueryLanguage"`
	states          map[string]*state
}

type processorConfig struct {
	Mode          string `json:"Mode"`
	ExecutionType string `json:"ExecutionType"`
}

type retrier struct {
	ErrorEquals     []string `json:"ErrorEquals"`
	IntervalSeconds *float64 `json:"IntervalSeconds"`
	MaxAttempts     *int     `json:"MaxAttempts"`
	BackoffRate     *float64 `json:"BackoffRate"`
	MaxDelaySeconds float64  `json:"MaxDelaySeconds"`
	JitterStrategy  string   `json:"JitterStrategy"`
}

type catcher struct {
	ErrorEquals []string        `json:"ErrorEquals"`
	Next        string          `json:"Next"`
	ResultPath  json.RawMessage `json:"ResultPath"`
}

// state holds every field any state type may carry; check refuses the
// fields a type does not allow.
type state struct {
	name string

	Type           string          `json:"Type"`
	Comment        string          `json:"Comment"`
	Next           string          `json:"Next"`
	End            bool            `json:"End"`
	InputPath      json.RawMessage `json:"InputPath"`
	OutputPath     json.RawMessage `json:"OutputPath"`
	ResultPath     json.RawMessage `json:"ResultPath"`
	Parameters     any             `json:"Parameters"`
	ResultSelector any             `json:"ResultSelector"`
	Retry          []retrier       `json:"Retry"`
	Catch          []catcher       `json:"Catch"`
	// Task
	Resource         string `json:"Resource"`
	TimeoutSeconds   int    `json:"TimeoutSeconds"`
	HeartbeatSeconds int    `json:"HeartbeatSeconds"`
	// Pass
	Result any `json:"Result"`
	// Choice
	Choices []map[string]any `json:"Choices"`
	Default string           `json:"Default"`
	// Wait
	Seconds       *float64 `json:"Seconds"`
	SecondsPath   string   `json:"SecondsPath"`
	Timestamp     string   `json:"Timestamp"`
	TimestampPath string   `json:"TimestampPath"`
	// Fail
	Error     string `json:"Error"`
	Cause     string `json:"Cause"`
	ErrorPath string `json:"ErrorPath"`
	CausePath string `json:"CausePath"`
	// Parallel
	Branches []*machineDef `json:"Branches"`
	// Map
	ItemsPath      string      `json:"ItemsPath"`
	Items          any         `json:"Items"`
	ItemSelector   any         `json:"ItemSelector"`
	ItemProcessor  *machineDef `json:"ItemProcessor"`
	Iterator       *machineDef `json:"Iterator"`
	MaxConcurrency int         `json:"MaxConcurrency"`
}

// allowed lists the fields of each state type (besides Type and Comment).
var allowed = map[string][]string{
	"Task": {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Retry", "Catch", "Resource",
		"TimeoutSeconds", "HeartbeatSeconds"},
	"Pass":     {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "Result"},
	"Choice":   {"InputPath", "OutputPath", "Choices", "Default"},
	"Wait":     {"Next", "End", "InputPath", "OutputPath", "Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
	"Succeed":  {"InputPath", "OutputPath"},
	"Fail":     {"Error", "Cause", "ErrorPath", "CausePath"},
	"Parallel": {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Retry", "Catch", "Branches"},
	"Map": {"Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Retry", "Catch",
		"ItemsPath", "Items", "ItemSelector", "ItemProcessor", "Iterator", "MaxConcurrency"},
}

// intrinsics are the intrinsic functions the runner implements.
var intrinsics = []string{"States.Format", "States.StringToJson", "States.JsonToString", "States.Array",
	"States.ArrayLength", "States.MathAdd", "States.UUID"}

// parse decodes and checks one States scope.
func parse(raw []byte, where string) (*machineDef, error) {
	var m machineDef
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &m, m.check(where)
}

// UnmarshalJSON refuses fields a States scope does not have, at any depth.
func (m *machineDef) UnmarshalJSON(raw []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	for k := range fields {
		if !slices.Contains([]string{"Comment", "StartAt", "States", "TimeoutSeconds", "Version", "ProcessorConfig", "QueryLanguage"}, k) {
			return fmt.Errorf("unsupported field %q", k)
		}
	}
	type plain machineDef
	return json.Unmarshal(raw, (*plain)(m))
}

func (m *machineDef) check(where string) error {
	if m.QueryLanguage != "" && m.QueryLanguage != "JSONPath" {
		return fmt.Errorf("%s: QueryLanguage %q is not supported (only JSONPath)", where, m.QueryLanguage)
	}
	if m.ProcessorConfig != nil && m.ProcessorConfig.Mode != "" && m.ProcessorConfig.Mode != "INLINE" {
		return fmt.Errorf("%s: ProcessorConfig.Mode %q is not supported (only INLINE)", where, m.ProcessorConfig.Mode)
	}
	if _, ok := m.States[m.StartAt]; !ok || m.StartAt == "" {
		return fmt.Errorf("%s: StartAt %q names no state", where, m.StartAt)
	}
	m.states = map[string]*state{}
	names := make([]string, 0, len(m.States))
	for name := range m.States {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		st, err := parseState(name, m.States[name])
		if err != nil {
			return err
		}
		m.states[name] = st
	}
	for _, name := range names {
		if err := m.states[name].check(m); err != nil {
			return err
		}
	}
	return nil
}

func parseState(name string, raw json.RawMessage) (*state, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	var typ string
	json.Unmarshal(fields["Type"], &typ)
	allowedFields, ok := allowed[typ]
	if !ok {
		return nil, fmt.Errorf("state %q: unsupported Type %q", name, typ)
	}
	for k := range fields {
		if k != "Type" && k != "Comment" && !slices.Contains(allowedFields, k) {
			return nil, fmt.Errorf("state %q: unsupported field %q", name, k)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	st := &state{name: name}
	if err := dec.Decode(st); err != nil {
		return nil, fmt.Errorf("state %q: %w", name, err)
	}
	return st, nil
}

func (s *state) check(m *machineDef) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("state %q: %s", s.name, fmt.Sprintf(format, args...))
	}
	target := func(next, field string) error {
		if _, ok := m.States[next]; !ok {
			return fail("%s %q names no state in its scope", field, next)
		}
		return nil
	}
	switch s.Type {
	case "Choice":
		if len(s.Choices) == 0 {
			return fail("a Choice needs Choices")
		}
		for _, c := range s.Choices {
			next, _ := c["Next"].(string)
			if err := target(next, "Choices.Next"); err != nil {
				return err
			}
			if err := checkRule(c, true); err != nil {
				return fail("%v", err)
			}
		}
		if s.Default != "" {
			if err := target(s.Default, "Default"); err != nil {
				return err
			}
		}
	case "Succeed", "Fail":
	default:
		if s.End == (s.Next != "") {
			return fail("needs exactly one of Next and End")
		}
		if s.Next != "" {
			if err := target(s.Next, "Next"); err != nil {
				return err
			}
		}
	}
	for _, c := range s.Catch {
		if err := target(c.Next, "Catch.Next"); err != nil {
			return err
		}
		if err := checkReference(c.ResultPath); err != nil {
			return fail("Catch.ResultPath: %v", err)
		}
	}
	for _, p := range []json.RawMessage{s.InputPath, s.OutputPath} {
		if err := checkPath(p); err != nil {
			return fail("%v", err)
		}
	}
	if err := checkReference(s.ResultPath); err != nil {
		return fail("ResultPath: %v", err)
	}
	for _, tmpl := range []any{s.Parameters, s.ResultSelector, s.ItemSelector} {
		if err := checkTemplate(tmpl); err != nil {
			return fail("%v", err)
		}
	}
	for _, p := range []string{s.SecondsPath, s.TimestampPath, s.ErrorPath, s.CausePath, s.ItemsPath} {
		if p != "" {
			if _, err := compilePath(p); err != nil {
				return fail("%v", err)
			}
		}
	}
	switch s.Type {
	case "Task":
		if s.Resource == "" {
			return fail("a Task needs a Resource")
		}
		if s.TimeoutSeconds < 0 || s.HeartbeatSeconds < 0 {
			return fail("TimeoutSeconds and HeartbeatSeconds must be positive")
		}
		// Only a task that waits for a token has anyone to send heartbeats;
		// what the service does with them on a plain Lambda is not known here.
		if s.HeartbeatSeconds > 0 && s.Resource != lambdaInvokeWait {
			return fail("unsupported field %q (only on a %s task)", "HeartbeatSeconds", lambdaInvokeWait)
		}
		// The States Language: HeartbeatSeconds "MUST be smaller than" TimeoutSeconds.
		if s.HeartbeatSeconds > 0 && s.TimeoutSeconds > 0 && s.HeartbeatSeconds >= s.TimeoutSeconds {
			return fail("HeartbeatSeconds %d must be smaller than TimeoutSeconds %d", s.HeartbeatSeconds, s.TimeoutSeconds)
		}
	case "Parallel":
		if len(s.Branches) == 0 {
			return fail("a Parallel needs Branches")
		}
		for i, b := range s.Branches {
			if err := b.check(fmt.Sprintf("state %q branch %d", s.name, i)); err != nil {
				return err
			}
		}
	case "Map":
		proc := s.ItemProcessor
		if proc == nil {
			proc = s.Iterator
		}
		if proc == nil {
			return fail("a Map needs an ItemProcessor")
		}
		if s.ItemSelector != nil && s.Parameters != nil {
			return fail("give ItemSelector or Parameters, not both")
		}
		if err := proc.check(fmt.Sprintf("state %q ItemProcessor", s.name)); err != nil {
			return err
		}
	case "Wait":
		n := 0
		for _, set := range []bool{s.Seconds != nil, s.SecondsPath != "", s.Timestamp != "", s.TimestampPath != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fail("a Wait needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath")
		}
	}
	return nil
}

// compilePath parses a JSONPath ("$..." or the context object "$$...").
func compilePath(p string) (jp.Expr, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("path %q does not start with $", p)
	}
	if strings.HasPrefix(p, "$$") {
		p = p[1:] // the context object is queried as its own document
	}
	x, err := jp.ParseString(p)
	if err != nil {
		// ojg reads dotted names as identifiers; field names such as
		// "delivery-date" are valid in ASL, so retry them in brackets.
		if x, err = jp.ParseString(bracketNames(p)); err != nil {
			return nil, fmt.Errorf("path %q: %w", p, err)
		}
	}
	return x, nil
}

// bracketNames rewrites "$.a-b.c" as "$['a-b'].c" for names that are not
// identifiers.
func bracketNames(p string) string {
	if strings.ContainsAny(p, "[]()'\"") {
		return p
	}
	parts := strings.Split(p, ".")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, part := range parts[1:] {
		if strings.IndexFunc(part, func(r rune) bool {
			return !(r == '_' || r == '*' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) >= 0 {
			b.WriteString("['" + part + "']")
		} else {
			b.WriteString("." + part)
		}
	}
	return b.String()
}

func checkPath(raw json.RawMessage) error {
	return checkOptionalString(raw, "a path must be a string or null", func(p string) error {
		_, err := compilePath(p)
		return err
	})
}

// checkReference accepts the reference paths ResultPath allows: $ or
// $.a.b with plain names.
func checkReference(raw json.RawMessage) error {
	return checkOptionalString(raw, "must be a string or null", func(p string) error {
		_, err := referenceKeys(p)
		return err
	})
}

// checkOptionalString accepts a field that is absent or null, or a string
// that check accepts; anything else is notString.
func checkOptionalString(raw json.RawMessage, notString string, check func(string) error) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var p string
	if err := json.Unmarshal(raw, &p); err != nil {
		return errors.New(notString)
	}
	return check(p)
}

func referenceKeys(p string) ([]string, error) {
	if p == "$" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "$.") {
		return nil, fmt.Errorf("reference path %q must be $ or start with $.", p)
	}
	keys := strings.Split(p[2:], ".")
	for _, k := range keys {
		if k == "" || strings.ContainsAny(k, "[]*@()?") {
			return nil, fmt.Errorf("reference path %q may only name fields", p)
		}
	}
	return keys, nil
}

func checkTemplate(t any) error {
	switch v := t.(type) {
	case map[string]any:
		for k, val := range v {
			if strings.HasSuffix(k, ".$") {
				s, ok := val.(string)
				if !ok {
					return fmt.Errorf("%s must be a path or an intrinsic function", k)
				}
				if strings.HasPrefix(s, "States.") {
					if _, err := parseIntrinsic(s); err != nil {
						return fmt.Errorf("%s: %v", k, err)
					}
				} else if _, err := compilePath(s); err != nil {
					return fmt.Errorf("%s: %v", k, err)
				}
				continue
			}
			if err := checkTemplate(val); err != nil {
				return err
			}
		}
	case []any:
		for _, val := range v {
			if err := checkTemplate(val); err != nil {
				return err
			}
		}
	}
	return nil
}
