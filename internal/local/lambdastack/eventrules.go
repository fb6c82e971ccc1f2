package lambdastack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// patternRule is an EventBridge rule with an event pattern on the default
// bus (the template's safety net: Step Functions' execution status
// changes) and the functions it targets.
type patternRule struct {
	logical string
	pattern map[string]any
	targets []*Function
}

// loadPatternRules reads every enabled AWS::Events::Rule with an
// EventPattern. What the local bus does not model is refused here: content
// filters in a pattern (prefix, numeric, exists, ...) and a target's
// Input, InputPath or InputTransformer.
func (s *Stack) loadPatternRules() error {
	for _, logical := range s.resourcesOfType("AWS::Events::Rule") {
		if s.rawProperties(logical)["EventPattern"] == nil {
			continue
		}
		props, err := s.properties(logical)
		if err != nil {
			return err
		}
		if state, _ := props["State"].(string); state == "DISABLED" {
			continue
		}
		pattern, _ := props["EventPattern"].(map[string]any)
		if err := checkPattern(pattern); err != nil {
			return fmt.Errorf("%s: %w", logical, err)
		}
		rule := patternRule{logical: logical, pattern: pattern}
		targets, _ := props["Targets"].([]any)
		for _, t := range targets {
			tm, _ := t.(map[string]any)
			for _, k := range []string{"Input", "InputPath", "InputTransformer"} {
				if tm[k] != nil {
					return fmt.Errorf("%s: target %v: %s is not modelled by the local stack", logical, tm["Id"], k)
				}
			}
			fn, err := s.functionOfARN(fmt.Sprint(tm["Arn"]))
			if err != nil {
				return fmt.Errorf("%s: %w", logical, err)
			}
			rule.targets = append(rule.targets, fn)
		}
		s.rules = append(s.rules, rule)
	}
	return nil
}

// checkPattern refuses what matchPattern does not implement.
func checkPattern(p map[string]any) error {
	for k, v := range p {
		switch x := v.(type) {
		case map[string]any:
			if err := checkPattern(x); err != nil {
				return err
			}
		case []any:
			for _, e := range x {
				switch e.(type) {
				case map[string]any, []any:
					return fmt.Errorf("pattern field %s: content filters are not modelled by the local stack", k)
				}
			}
		default:
			return fmt.Errorf("pattern field %s: want an array or an object, as EventBridge does", k)
		}
	}
	return nil
}

// matchPattern applies an event pattern as EventBridge does for exact
// values: every field the pattern names must be in the event, and a value
// (or, for an array in the event, one of its elements) must be one the
// pattern lists.
func matchPattern(pattern, event map[string]any) bool {
	for k, p := range pattern {
		v, present := event[k]
		if !present {
			return false
		}
		switch pv := p.(type) {
		case map[string]any:
			sub, ok := v.(map[string]any)
			if !ok || !matchPattern(pv, sub) {
				return false
			}
		case []any:
			values, isList := v.([]any)
			if !isList {
				values = []any{v}
			}
			hit := false
			for _, val := range values {
				for _, want := range pv {
					if val == want {
						hit = true
					}
				}
			}
			if !hit {
				return false
			}
		}
	}
	return true
}

// putEvent puts an event on the default bus: each rule it matches invokes
// its targets asynchronously.
func (s *Stack) putEvent(raw []byte) {
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		s.cfg.Log.Error("an event that is not JSON", "error", err)
		return
	}
	// The check and the Adds under closeMu: once Close has set closing,
	// no target is added to what its wg.Wait waits for.
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closing.Load() {
		return
	}
	for _, rule := range s.rules {
		if !matchPattern(rule.pattern, ev) {
			continue
		}
		for _, fn := range rule.targets {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.invokeAsync(s.runCtx, rule.logical, fn, raw)
			}()
		}
	}
}

// asyncRetryDelays are Lambda's waits between the attempts of an
// asynchronous invocation whose function fails: two retries, one minute
// then two minutes apart (the function's default
// MaximumRetryAttempts).
var asyncRetryDelays = []time.Duration{time.Minute, 2 * time.Minute}

// invokeAsync invokes fn with the event as EventBridge does, through
// Lambda's asynchronous invocation: a function error is retried twice;
// after that the event is dropped (the function has no on-failure
// destination). The rule's own RetryPolicy and dead-letter queue are
// EventBridge's for events Lambda does not accept at all, which this
// machine does not produce.
func (s *Stack) invokeAsync(ctx context.Context, rule string, fn *Function, event []byte) {
	for attempt := 0; ; attempt++ {
		_, err := fn.Invoke(ctx, event)
		if err == nil {
			return
		}
		if attempt >= len(asyncRetryDelays) || ctx.Err() != nil {
			s.cfg.Log.Error("the rule's event was not taken: dropped", "rule", rule, "function", fn.Logical, "attempts", attempt+1, "error", err)
			return
		}
		s.cfg.Log.Warn("the rule's target failed: retried", "rule", rule, "function", fn.Logical, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(asyncRetryDelays[attempt]):
		}
	}
}

// EventRules are the event-pattern rules the stack runs, by logical ID,
// with their targets' logical IDs.
func (s *Stack) EventRules() map[string][]string {
	out := map[string][]string{}
	for _, r := range s.rules {
		for _, fn := range r.targets {
			out[r.logical] = append(out[r.logical], fn.Logical)
		}
	}
	return out
}
