package deploy

import "testing"

// sqsTriggers are a function's SQS event sources by name: its SAM events
// of Type SQS, and the AWS::Lambda::EventSourceMapping resources whose
// FunctionName is !Ref function (their EventSourceArn read as Queue), each
// with its properties.
func sqsTriggers(tpl *Template, function string) map[string]map[string]any {
	out := map[string]map[string]any{}
	events, _ := tpl.Resources[function].Properties["Events"].(map[string]any)
	for name, e := range events {
		em, _ := e.(map[string]any)
		if em["Type"] != "SQS" {
			continue
		}
		p, _ := em["Properties"].(map[string]any)
		out[function+".Events."+name] = p
	}
	for name, r := range tpl.Resources {
		if r.Type != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		if fn, _ := ref(r.Properties["FunctionName"]); fn != function {
			continue
		}
		p := map[string]any{"Queue": r.Properties["EventSourceArn"]}
		for k, v := range r.Properties {
			if k != "EventSourceArn" && k != "FunctionName" {
				p[k] = v
			}
		}
		out[name] = p
	}
	return out
}

// sqsSources are the queues (logical ID) of an SQS trigger of a function.
func sqsSources(tpl *Template, function string) []string {
	var out []string
	for _, p := range sqsTriggers(tpl, function) {
		if q, ok := getAttOf(p["Queue"]); ok {
			out = append(out, q)
		}
	}
	return out
}

// getAttOf is the resource of a {"Fn::GetAtt": [resource, attribute]}.
func getAttOf(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	args, _ := m["Fn::GetAtt"].([]any)
	if len(args) != 2 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}

// sendsTo lists the queues a function may send to (SQSSendMessagePolicy).
func sendsTo(fn Resource) []string {
	var out []string
	policies, _ := fn.Properties["Policies"].([]any)
	for _, p := range policies {
		pm, _ := p.(map[string]any)
		send, ok := pm["SQSSendMessagePolicy"].(map[string]any)
		if !ok {
			continue
		}
		if q, ok := getAttOf(send["QueueName"]); ok {
			out = append(out, q)
		}
	}
	return out
}

// A function that sends to the queue that invokes it is a chain Lambda's
// recursive-loop guard stops at its 17th invocation (the SDK carries the
// trace header through SQS) unless the function sets RecursiveLoop: Allow;
// SAM must pass the property to the function. (The local runtime's queues
// apply the same setting: internal/local/runtime checks it.)
func TestFunctionsThatFeedTheirOwnQueueAllowRecursion(t *testing.T) {
	loops := map[string]bool{}
	for _, f := range functions {
		fn := resource(t, f.ID, "AWS::Serverless::Function")
		for _, q := range sqsSources(tmpl(t), f.ID) {
			for _, s := range sendsTo(fn) {
				if s == q {
					loops[f.ID] = true
				}
			}
		}
		setting, _ := fn.Properties["RecursiveLoop"].(string)
		switch {
		case loops[f.ID] && setting != "Allow":
			t.Errorf("%s sends to the queue that invokes it but sets RecursiveLoop %q: Lambda stops the chain at 16 invocations; want Allow, with the reason", f.ID, setting)
		case !loops[f.ID] && setting != "":
			t.Errorf("%s sets RecursiveLoop %q but feeds no queue of its own: leave AWS's guard on", f.ID, setting)
		}
	}
	for _, want := range []string{"PollerFunction", "WebhooksFunction"} {
		if !loops[want] {
			t.Errorf("%s no longer sends to its own queue: update this test and docs/reliability.md", want)
		}
	}

	resources, _ := expanded(t)["Resources"].(map[string]any)
	for id := range loops {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		if p["RecursiveLoop"] != "Allow" {
			t.Errorf("aws-sam-translator gives AWS::Lambda::Function %s RecursiveLoop %v, want Allow", id, p["RecursiveLoop"])
		}
	}
}
