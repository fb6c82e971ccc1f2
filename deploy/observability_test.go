package deploy

import (
	"regexp"
	"slices"
	"sort"
	"testing"
)

// CloudWatch Logs' accepted RetentionInDays values.
var retentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}

var stages = []string{"dev", "prod"}

func TestEveryLogGroupExpires(t *testing.T) {
	tpl := tmpl(t)
	groups := ofType(tpl, "AWS::Logs::LogGroup")
	for _, g := range groups {
		days := map[string]int{}
		for _, stage := range stages {
			v, err := tpl.Evaluate(tpl.Resources[g].Properties["RetentionInDays"], map[string]string{"Stage": stage})
			n, ok := number(v)
			if err != nil || !ok || !slices.Contains(retentionDays, n) {
				t.Errorf("%s: RetentionInDays with Stage=%s is %s (%v); want one of CloudWatch Logs' values %v (without it, logs never expire)", g, stage, show(v), err, retentionDays)
			}
			days[stage] = n
		}
		if days["prod"] < days["dev"] {
			t.Errorf("%s: keeps logs %d days in prod and %d in dev; prod keeps them longer", g, days["prod"], days["dev"])
		}
	}
}

func TestEveryFunctionHasItsLogGroup(t *testing.T) {
	tpl := tmpl(t)
	groupOf := map[string][]string{} // function -> log groups named after it
	for name, r := range tpl.Resources {
		if r.Type != "AWS::Logs::LogGroup" {
			continue
		}
		text, vars, ok := sub(r.Properties["LogGroupName"])
		if !ok || vars != nil {
			continue
		}
		ph := placeholders(text)
		if len(ph) == 1 && text == "/aws/lambda/${"+ph[0]+"}" {
			if tpl.Resources[ph[0]].Type != "AWS::Serverless::Function" {
				t.Errorf("%s: LogGroupName %s names %s, which is not a function", name, text, ph[0])
				continue
			}
			groupOf[ph[0]] = append(groupOf[ph[0]], name)
		}
	}
	for _, f := range functions {
		switch g := groupOf[f.ID]; len(g) {
		case 0:
			t.Errorf("%s: no AWS::Logs::LogGroup named !Sub /aws/lambda/${%s}; Lambda would make one that never expires", f.ID, f.ID)
		case 1:
		default:
			t.Errorf("%s: several log groups claim its name: %v", f.ID, g)
		}
		// The group above is where the function writes only if its
		// logging config names no other.
		logging, _ := resource(t, f.ID, "AWS::Serverless::Function").Properties["LoggingConfig"].(map[string]any)
		if lg, ok := logging["LogGroup"]; ok {
			t.Errorf("%s: LoggingConfig.LogGroup %s; the function writes to /aws/lambda/<its name>, whose retention the template sets", f.ID, show(lg))
		}
	}
}

// deadLetterQueues maps every dead-letter queue of the template to what it
// catches: a queue's RedrivePolicy target, or the DeadLetterConfig of a
// function's event (EventBridge keeps there what it could not deliver).
func deadLetterQueues(t *testing.T) map[string]string {
	t.Helper()
	tpl := tmpl(t)
	out := map[string]string{}
	for name, r := range tpl.Resources {
		if r.Type == "AWS::SQS::Queue" {
			rp, _ := r.Properties["RedrivePolicy"].(map[string]any)
			if dlq, attr, ok := getAtt(rp["deadLetterTargetArn"]); ok && attr == "Arn" {
				out[dlq] = name
			}
		}
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		events, _ := r.Properties["Events"].(map[string]any)
		for ename, e := range events {
			p, _ := e.(map[string]any)["Properties"].(map[string]any)
			dc, _ := p["DeadLetterConfig"].(map[string]any)
			if dlq, attr, ok := getAtt(dc["Arn"]); ok && attr == "Arn" {
				out[dlq] = name + ".Events." + ename
			} else if dc != nil {
				t.Errorf("%s.Events.%s: DeadLetterConfig is %s, want Arn: !GetAtt <a queue of the template>.Arn (a queue SAM makes has no alarm)", name, ename, show(dc))
			}
		}
	}
	return out
}

// alarmsOn lists the alarms on a metric whose dimension dim is want.
func alarmsOn(t *testing.T, namespace, metric, dim string, want any) []string {
	t.Helper()
	var out []string
	for name, r := range tmpl(t).Resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		p := r.Properties
		if p["Namespace"] != namespace || p["MetricName"] != metric {
			continue
		}
		dims, _ := p["Dimensions"].([]any)
		for _, d := range dims {
			dm, _ := d.(map[string]any)
			if dm["Name"] == dim && show(dm["Value"]) == show(want) {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// firesOnFirst: the alarm goes off as soon as one message or execution is
// counted in a period.
func firesOnFirst(p map[string]any) bool {
	threshold, ok := number(p["Threshold"])
	switch p["ComparisonOperator"] {
	case "GreaterThanThreshold":
		return ok && threshold == 0
	case "GreaterThanOrEqualToThreshold":
		return ok && threshold == 1
	}
	return false
}

func TestAlarmsWatchTheDeadLettersAndTheWorkflowAndMailTheTopic(t *testing.T) {
	tpl := tmpl(t)
	topic := resource(t, "AlarmTopic", "AWS::SNS::Topic")
	if _, ok := topic.Properties["KmsMasterKeyId"]; ok {
		t.Errorf("AlarmTopic: KmsMasterKeyId %s; CloudWatch cannot publish to a topic under the AWS managed key, and a customer key needs a policy for cloudwatch.amazonaws.com", show(topic.Properties["KmsMasterKeyId"]))
	}
	toTopic := map[string]any{"Ref": "AlarmTopic"}

	// Every alarm notifies the topic.
	for name, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		p := r.Properties
		if actions, _ := p["AlarmActions"].([]any); !slices.ContainsFunc(actions, func(a any) bool { return show(a) == show(toTopic) }) {
			t.Errorf("%s: AlarmActions %s do not notify !Ref AlarmTopic", name, show(p["AlarmActions"]))
		}
	}
	// A dead letter or a failed execution: the first one is enough.
	firstOne := func(name string) {
		p := tpl.Resources[name].Properties
		if !firesOnFirst(p) {
			t.Errorf("%s: fires at %s %s; want the first message or execution (> 0)", name, show(p["ComparisonOperator"]), show(p["Threshold"]))
		}
		if n, ok := number(p["EvaluationPeriods"]); !ok || n != 1 {
			t.Errorf("%s: EvaluationPeriods %s; want 1, so one occurrence is enough", name, show(p["EvaluationPeriods"]))
		}
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s: TreatMissingData %s; want notBreaching (no data is no dead letter, no failed execution)", name, show(p["TreatMissingData"]))
		}
	}

	// A message in any dead-letter queue: the work it carried needs a person.
	dlqs := deadLetterQueues(t)
	if len(dlqs) < 2 {
		t.Errorf("found the dead-letter queues %v; want at least the poll and webhook queues'", dlqs)
	}
	for _, dlq := range sortedKeys(dlqs) {
		alarms := alarmsOn(t, "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", map[string]any{"Fn::GetAtt": []any{dlq, "QueueName"}})
		if len(alarms) == 0 {
			t.Errorf("%s (the dead-letter queue of %s): no alarm on AWS/SQS ApproximateNumberOfMessagesVisible with QueueName !GetAtt %s.QueueName", dlq, dlqs[dlq], dlq)
		}
		for _, a := range alarms {
			firstOne(a)
			if s := tpl.Resources[a].Properties["Statistic"]; s != "Maximum" && s != "Sum" {
				t.Errorf("%s: Statistic %s on a queue depth; want Maximum", a, show(s))
			}
		}
	}

	// A customer's cancel aborts its execution: no alarm on that.
	if alarms := alarmsOn(t, "AWS/States", "ExecutionsAborted", "StateMachineArn", map[string]any{"Ref": "LongStoryStateMachine"}); len(alarms) > 0 {
		t.Errorf("%v alarm on AWS/States ExecutionsAborted, which every customer cancel raises (StopExecution); alarm on failures and timeouts", alarms)
	}
	// An execution that failed or timed out.
	for _, metric := range []string{"ExecutionsFailed", "ExecutionsTimedOut"} {
		alarms := alarmsOn(t, "AWS/States", metric, "StateMachineArn", map[string]any{"Ref": "LongStoryStateMachine"})
		if len(alarms) == 0 {
			t.Errorf("no alarm on AWS/States %s with StateMachineArn !Ref LongStoryStateMachine", metric)
		}
		for _, a := range alarms {
			firstOne(a)
			if s := tpl.Resources[a].Properties["Statistic"]; s != "Sum" {
				t.Errorf("%s: Statistic %s; an execution count wants Sum", a, show(s))
			}
		}
	}

	// The topic mails AlarmEmail, and only when one is given.
	p, _ := tpl.Parameters["AlarmEmail"].(map[string]any)
	if d, ok := p["Default"]; !ok || d != "" {
		t.Errorf("Parameters.AlarmEmail: Default %s, want \"\" (no subscription unless asked)", show(d))
	}
	subs := ofType(tpl, "AWS::SNS::Subscription")
	if len(subs) != 1 {
		t.Fatalf("AWS::SNS::Subscription resources %v, want one (the alarm email)", subs)
	}
	sub := tpl.Resources[subs[0]]
	if show(sub.Properties["TopicArn"]) != show(toTopic) || sub.Properties["Protocol"] != "email" || show(sub.Properties["Endpoint"]) != show(map[string]any{"Ref": "AlarmEmail"}) {
		t.Errorf("%s: %s, want TopicArn !Ref AlarmTopic, Protocol email, Endpoint !Ref AlarmEmail", subs[0], show(sub.Properties))
	}
	for email, want := range map[string]bool{"": false, "ops@example.com": true} {
		got, err := tpl.Condition(sub.Condition, map[string]string{"AlarmEmail": email})
		if err != nil || got != want {
			t.Errorf("%s: Condition %q with AlarmEmail=%q is %v (%v), want %v (an empty email makes no subscription)", subs[0], sub.Condition, email, got, err, want)
		}
	}
	if pattern, ok := p["AllowedPattern"].(string); ok {
		for _, email := range []string{"", "ops@example.com"} {
			if !regexp.MustCompile(pattern).MatchString(email) {
				t.Errorf("Parameters.AlarmEmail: AllowedPattern %s refuses %q", pattern, email)
			}
		}
	}
}

// TestTheSafetyNetRuleFailsEveryExecutionThatEndedBadly: an execution that
// ends without running its MarkFailed state (timed out, aborted, failed
// outside a Catch) must still fail its video and release its credits.
func TestTheSafetyNetRuleFailsEveryExecutionThatEndedBadly(t *testing.T) {
	tpl := tmpl(t)
	fn := resource(t, "MarkFailedFunction", "AWS::Serverless::Function")
	events, _ := fn.Properties["Events"].(map[string]any)
	var rules []string
	for name, e := range events {
		if e.(map[string]any)["Type"] == "EventBridgeRule" {
			rules = append(rules, name)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("MarkFailedFunction has EventBridgeRule events %v, want one", rules)
	}
	event := rules[0]
	p, _ := events[event].(map[string]any)["Properties"].(map[string]any)
	pattern, _ := p["Pattern"].(map[string]any)
	detail, _ := pattern["detail"].(map[string]any)
	status := stringsOf(detail["status"])
	sort.Strings(status)
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"source", pattern["source"], []any{"aws.states"}},
		{"detail-type", pattern["detail-type"], []any{"Step Functions Execution Status Change"}},
		{"detail.status", status, []string{"ABORTED", "FAILED", "TIMED_OUT"}},
		{"detail.stateMachineArn", detail["stateMachineArn"], []any{map[string]any{"Ref": "LongStoryStateMachine"}}},
	} {
		if show(c.got) != show(c.want) {
			t.Errorf("MarkFailedFunction.Events.%s: Pattern %s is %s, want %s", event, c.what, show(c.got), show(c.want))
		}
	}
	if len(pattern) != 3 || len(detail) != 2 {
		t.Errorf("MarkFailedFunction.Events.%s: Pattern %s has more than source, detail-type, detail.status and detail.stateMachineArn", event, show(pattern))
	}
	if bus, ok := p["EventBusName"]; ok && bus != "default" {
		t.Errorf("MarkFailedFunction.Events.%s: EventBusName %s; Step Functions sends its status changes to the default bus", event, show(bus))
	}

	// EventBridge retries a failed delivery (at most 185 times, for at most
	// a day), then keeps the event in the dead-letter queue.
	retry, _ := p["RetryPolicy"].(map[string]any)
	attempts, okA := number(retry["MaximumRetryAttempts"])
	age, okE := number(retry["MaximumEventAgeInSeconds"])
	if !okA || !okE || attempts < 1 || attempts > 185 || age < 60 || age > 86400 {
		t.Errorf("MarkFailedFunction.Events.%s: RetryPolicy %s, want MaximumRetryAttempts 1-185 and MaximumEventAgeInSeconds 60-86400", event, show(retry))
	}
	dc, _ := p["DeadLetterConfig"].(map[string]any)
	dlq, _, _ := getAtt(dc["Arn"])
	if tpl.Resources[dlq].Type != "AWS::SQS::Queue" {
		t.Fatalf("MarkFailedFunction.Events.%s: DeadLetterConfig %s, want Arn: !GetAtt <a queue>.Arn", event, show(dc))
	}
	// EventBridge may send to it: a queue policy for events.amazonaws.com,
	// limited to this rule (its name is fixed so the policy can name it).
	ruleName, _, _ := sub(p["RuleName"])
	allowed := false
	for name, r := range tpl.Resources {
		if r.Type != "AWS::SQS::QueuePolicy" || !slices.ContainsFunc(r.Properties["Queues"].([]any), func(q any) bool { x, _ := ref(q); return x == dlq }) {
			continue
		}
		doc, _ := r.Properties["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			sm, _ := s.(map[string]any)
			principal, _ := sm["Principal"].(map[string]any)
			cond, _ := sm["Condition"].(map[string]any)
			eq, _ := cond["ArnEquals"].(map[string]any)
			source, _, _ := sub(eq["aws:SourceArn"])
			if sm["Effect"] == "Allow" && principal["Service"] == "events.amazonaws.com" && slices.Equal(stringsOf(sm["Action"]), []string{"sqs:SendMessage"}) {
				if ruleName == "" || source != "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/"+ruleName {
					t.Errorf("%s: lets events.amazonaws.com send with aws:SourceArn %q; want the rule's own ARN (rule/%s)", name, source, ruleName)
					continue
				}
				allowed = true
			}
		}
	}
	if !allowed {
		t.Errorf("%s: no AWS::SQS::QueuePolicy lets the rule (events.amazonaws.com) send to it; EventBridge would drop what it could not deliver", dlq)
	}

	// As sam deploy expands it: a rule on the default bus whose one target
	// is the function, with the retry policy and dead-letter queue above.
	resources, _ := expanded(t)["Resources"].(map[string]any)
	found := false
	for name, r := range resources {
		rm, _ := r.(map[string]any)
		if rm["Type"] != "AWS::Events::Rule" {
			continue
		}
		rp, _ := rm["Properties"].(map[string]any)
		if show(rp["EventPattern"]) != show(map[string]any{"source": pattern["source"], "detail-type": pattern["detail-type"], "detail": detail}) {
			continue
		}
		found = true
		targets, _ := rp["Targets"].([]any)
		if len(targets) != 1 {
			t.Errorf("expanded %s: targets %s, want MarkFailedFunction alone", name, show(targets))
			continue
		}
		tg, _ := targets[0].(map[string]any)
		if fn, attr, _ := getAtt(tg["Arn"]); fn != "MarkFailedFunction" || attr != "Arn" {
			t.Errorf("expanded %s: target %s, want !GetAtt MarkFailedFunction.Arn", name, show(tg["Arn"]))
		}
		if tg["RetryPolicy"] == nil || tg["DeadLetterConfig"] == nil {
			t.Errorf("expanded %s: target %s lost its RetryPolicy or DeadLetterConfig", name, show(tg))
		}
		if rp["State"] != nil && rp["State"] != "ENABLED" {
			t.Errorf("expanded %s: State %s", name, show(rp["State"]))
		}
	}
	if !found {
		t.Errorf("the expanded template has no AWS::Events::Rule with MarkFailedFunction.Events.%s's pattern", event)
	}
}
