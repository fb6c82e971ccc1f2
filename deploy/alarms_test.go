package deploy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/generation"
)

// watched is one metric an alarm (or one of its metric math terms) reads.
type watched struct {
	Alarm, Namespace, Metric string
	Dimensions               map[string]any // name -> value (a Ref or GetAtt)
}

// alarmMetrics lists every metric every alarm of the template reads.
func alarmMetrics(t *testing.T) []watched {
	t.Helper()
	var out []watched
	add := func(alarm string, m map[string]any) {
		w := watched{Alarm: alarm, Dimensions: map[string]any{}}
		w.Namespace, _ = m["Namespace"].(string)
		w.Metric, _ = m["MetricName"].(string)
		dims, _ := m["Dimensions"].([]any)
		for _, d := range dims {
			dm, _ := d.(map[string]any)
			name, _ := dm["Name"].(string)
			w.Dimensions[name] = dm["Value"]
		}
		out = append(out, w)
	}
	tpl := tmpl(t)
	for _, name := range sortedKeys(tpl.Resources) {
		r := tpl.Resources[name]
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		if _, ok := r.Properties["MetricName"]; ok {
			add(name, r.Properties)
		}
		terms, _ := r.Properties["Metrics"].([]any)
		for _, term := range terms {
			tm, _ := term.(map[string]any)
			stat, _ := tm["MetricStat"].(map[string]any)
			if m, ok := stat["Metric"].(map[string]any); ok {
				add(name, m)
			}
		}
	}
	return out
}

// dimensionTarget is, per namespace and dimension, the resource type and
// the reference (Ref, or the GetAtt attribute) whose value CloudWatch
// reports under it.
var dimensionTarget = map[string]struct{ Type, Attr string }{
	"AWS/Lambda FunctionName":    {"AWS::Serverless::Function", "Ref"},
	"AWS/SQS QueueName":          {"AWS::SQS::Queue", "QueueName"},
	"AWS/DynamoDB TableName":     {"AWS::DynamoDB::Table", "Ref"},
	"AWS/ApiGateway ApiId":       {"AWS::Serverless::HttpApi", "Ref"},
	"AWS/States StateMachineArn": {"AWS::Serverless::StateMachine", "Ref"},
}

// TestEveryAlarmWatchesAResourceOfTheStack: a dimension that names nothing
// (a typo, a function's logical ID where its name is reported) is an alarm
// that never sees a data point, and stays silent.
func TestEveryAlarmWatchesAResourceOfTheStack(t *testing.T) {
	tpl := tmpl(t)
	ws := alarmMetrics(t)
	if len(ws) == 0 {
		t.Fatal("no alarm reads a metric")
	}
	for _, w := range ws {
		if w.Metric == "ExecutionsAborted" {
			t.Errorf("%s: reads AWS/States ExecutionsAborted, which every customer cancel raises", w.Alarm)
		}
		if len(w.Dimensions) != 1 {
			t.Errorf("%s: %s %s with dimensions %s; want exactly one (CloudWatch matches the whole set)", w.Alarm, w.Namespace, w.Metric, show(w.Dimensions))
		}
		for dim, v := range w.Dimensions {
			want, ok := dimensionTarget[w.Namespace+" "+dim]
			if !ok {
				t.Errorf("%s: %s %s by %s, a dimension this test does not know", w.Alarm, w.Namespace, w.Metric, dim)
				continue
			}
			var res string
			if want.Attr == "Ref" {
				res, _ = ref(v)
			} else if r, attr, ok := getAtt(v); ok && attr == want.Attr {
				res = r
			}
			if tpl.Resources[res].Type != want.Type {
				t.Errorf("%s: %s %s by %s = %s; want the %s of an %s of the template", w.Alarm, w.Namespace, w.Metric, dim, show(v), want.Attr, want.Type)
			}
		}
	}
}

// on lists the alarms reading namespace/metric with dimension dim = want
// (alone or as a term of a metric math alarm).
func on(ws []watched, namespace, metric, dim string, want any) []string {
	var out []string
	for _, w := range ws {
		if w.Namespace == namespace && w.Metric == metric && show(w.Dimensions[dim]) == show(want) {
			out = append(out, w.Alarm)
		}
	}
	return out
}

func TestEveryFunctionsErrorsAndThrottlesAlarm(t *testing.T) {
	tpl := tmpl(t)
	ws := alarmMetrics(t)
	ids := ofType(tpl, "AWS::Serverless::Function")
	if len(ids) != len(functions) {
		t.Errorf("the template has %d functions, the test knows %d", len(ids), len(functions))
	}
	for _, f := range ids {
		for _, metric := range []string{"Errors", "Throttles"} {
			alarms := on(ws, "AWS/Lambda", metric, "FunctionName", map[string]any{"Ref": f})
			if len(alarms) == 0 {
				t.Errorf("%s: no alarm on AWS/Lambda %s with FunctionName !Ref %s", f, metric, f)
			}
			for _, a := range alarms {
				p := tpl.Resources[a].Properties
				if p["Statistic"] != "Sum" || !firesOnFirst(p) || p["TreatMissingData"] != "notBreaching" {
					t.Errorf("%s: Statistic %s, %s %s, TreatMissingData %s; want Sum > 0 (one failed or throttled invocation), notBreaching (an idle function reports nothing)",
						a, show(p["Statistic"]), show(p["ComparisonOperator"]), show(p["Threshold"]), show(p["TreatMissingData"]))
				}
			}
		}
	}
}

func TestTheAPIsFiveHundredsAlarm(t *testing.T) {
	tpl := tmpl(t)
	// An HTTP API reports 4xx, 5xx, Count and Latency by ApiId.
	alarms := on(alarmMetrics(t), "AWS/ApiGateway", "5xx", "ApiId", map[string]any{"Ref": "HttpApi"})
	if len(alarms) == 0 {
		t.Fatal("no alarm on AWS/ApiGateway 5xx with ApiId !Ref HttpApi")
	}
	for _, a := range alarms {
		p := tpl.Resources[a].Properties
		if n, ok := number(p["Threshold"]); p["Statistic"] != "Sum" || !ok || n < 0 || p["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s: Statistic %s, Threshold %s, TreatMissingData %s; want a Sum of 5xx, notBreaching", a, show(p["Statistic"]), show(p["Threshold"]), show(p["TreatMissingData"]))
		}
	}
}

// TestDynamoDBThrottlesAndConflictsAlarm: every table's throttled reads and
// writes and its transaction conflicts are read by an alarm; metric math
// sums at most 10 metrics of one period.
func TestDynamoDBThrottlesAndConflictsAlarm(t *testing.T) {
	tpl := tmpl(t)
	ws := alarmMetrics(t)
	tables := ofType(tpl, "AWS::DynamoDB::Table")
	mathAlarms := map[string]bool{}
	for _, table := range tables {
		for _, metric := range []string{"ReadThrottleEvents", "WriteThrottleEvents", "TransactionConflict"} {
			alarms := on(ws, "AWS/DynamoDB", metric, "TableName", map[string]any{"Ref": table})
			if len(alarms) == 0 {
				t.Errorf("%s: no alarm on AWS/DynamoDB %s with TableName !Ref %s", table, metric, table)
			}
			for _, a := range alarms {
				if _, ok := tpl.Resources[a].Properties["Metrics"]; ok {
					mathAlarms[a] = true
				}
			}
		}
	}
	for a := range mathAlarms {
		p := tpl.Resources[a].Properties
		terms, _ := p["Metrics"].([]any)
		var returned, stats []string
		periods := map[string]bool{}
		for _, term := range terms {
			tm, _ := term.(map[string]any)
			if tm["ReturnData"] != false {
				returned = append(returned, show(tm["Id"]))
			}
			if stat, ok := tm["MetricStat"].(map[string]any); ok {
				stats = append(stats, show(tm["Id"]))
				periods[show(stat["Period"])+" "+show(stat["Stat"])] = true
			} else if tm["Expression"] != "SUM(METRICS())" {
				t.Errorf("%s: expression %s; want SUM(METRICS())", a, show(tm["Expression"]))
			}
		}
		if len(returned) != 1 || len(stats) > 10 || len(periods) != 1 || !periods["300 \"Sum\""] {
			t.Errorf("%s: returns %v, reads %d metrics with period and stat %v; want one result, at most 10 metrics (CloudWatch's limit), all Sum over 300 s", a, returned, len(stats), periods)
		}
		if _, ok := p["MetricName"]; ok {
			t.Errorf("%s: both MetricName and Metrics", a)
		}
	}
}

func TestAStalledPollQueueAlarms(t *testing.T) {
	tpl := tmpl(t)
	alarms := on(alarmMetrics(t), "AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", map[string]any{"Fn::GetAtt": []any{"PollQueue", "QueueName"}})
	if len(alarms) == 0 {
		t.Fatal("no alarm on AWS/SQS ApproximateAgeOfOldestMessage with QueueName !GetAtt PollQueue.QueueName")
	}
	visibility, _ := number(tpl.Resources["PollQueue"].Properties["VisibilityTimeout"])
	for _, a := range alarms {
		p := tpl.Resources[a].Properties
		threshold, _ := number(p["Threshold"])
		// A poll waits at most MaxPollInterval before it is due; one that
		// failed comes back after the visibility timeout.
		if p["Statistic"] != "Maximum" || p["ComparisonOperator"] != "GreaterThanThreshold" ||
			float64(threshold) < 4*generation.MaxPollInterval.Seconds() || threshold >= visibility {
			t.Errorf("%s: %s %s %d; want Maximum GreaterThanThreshold above 4 x the longest poll delay (%s) and below PollQueue's visibility timeout (%d s), so a failing poller shows before its message comes back",
				a, show(p["Statistic"]), show(p["ComparisonOperator"]), threshold, generation.MaxPollInterval, visibility)
		}
	}
}

// TestAStoppedSweeperAlarms: the sweeper's failures are its Errors alarm;
// a sweeper that no longer runs reports no data at all.
func TestAStoppedSweeperAlarms(t *testing.T) {
	tpl := tmpl(t)
	events, _ := resource(t, "SweeperFunction", "AWS::Serverless::Function").Properties["Events"].(map[string]any)
	var every time.Duration
	for _, e := range events {
		p, _ := e.(map[string]any)["Properties"].(map[string]any)
		if s, _ := p["Schedule"].(string); strings.HasPrefix(s, "rate(") && strings.HasSuffix(s, " minutes)") {
			d, err := time.ParseDuration(strings.TrimSuffix(strings.TrimPrefix(s, "rate("), " minutes)") + "m")
			if err == nil {
				every = d
			}
		}
	}
	if every == 0 {
		t.Fatalf("SweeperFunction: no rate(N minutes) schedule in %s", show(events))
	}
	alarms := on(alarmMetrics(t), "AWS/Lambda", "Invocations", "FunctionName", map[string]any{"Ref": "SweeperFunction"})
	if len(alarms) == 0 {
		t.Fatal("no alarm on AWS/Lambda Invocations with FunctionName !Ref SweeperFunction (a sweeper that stopped running)")
	}
	for _, a := range alarms {
		p := tpl.Resources[a].Properties
		period, _ := number(p["Period"])
		evals, _ := number(p["EvaluationPeriods"])
		threshold, _ := number(p["Threshold"])
		window := time.Duration(period*evals) * time.Second
		if p["ComparisonOperator"] != "LessThanThreshold" || threshold != 1 || p["TreatMissingData"] != "breaching" || p["Statistic"] != "Sum" {
			t.Errorf("%s: Sum %s %s, TreatMissingData %s; want Sum LessThanThreshold 1 with missing data breaching (no run reports no data)", a, show(p["ComparisonOperator"]), show(p["Threshold"]), show(p["TreatMissingData"]))
		}
		if window < 2*every {
			t.Errorf("%s: looks at %s; the sweeper runs every %s, so a window under two runs alarms on one late start", a, window, every)
		}
	}
}

// TestTheDashboardShowsTheAlarmsMetrics: the dashboard's body is JSON once
// its ${} are substituted, and graphs what the alarms watch.
func TestTheDashboardShowsTheAlarmsMetrics(t *testing.T) {
	tpl := tmpl(t)
	dashboards := ofType(tpl, "AWS::CloudWatch::Dashboard")
	if len(dashboards) != 1 {
		t.Fatalf("AWS::CloudWatch::Dashboard resources %v, want one", dashboards)
	}
	body, vars, ok := sub(tpl.Resources[dashboards[0]].Properties["DashboardBody"])
	if !ok || vars != nil {
		t.Fatalf("%s: DashboardBody is %s, want !Sub <JSON>", dashboards[0], show(tpl.Resources[dashboards[0]].Properties["DashboardBody"]))
	}
	// Each placeholder becomes a token naming what it refers to.
	text := subVar.ReplaceAllStringFunc(body, func(m string) string {
		name := m[2 : len(m)-1]
		res, _, _ := strings.Cut(name, ".")
		if _, ok := tpl.Resources[res]; !ok && !slices.Contains(pseudoParameters, name) {
			t.Errorf("%s: ${%s} names nothing of the template", dashboards[0], name)
		}
		return "<" + name + ">"
	})
	var doc struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Region  string
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%s: DashboardBody is not JSON: %v", dashboards[0], err)
	}
	// The metrics graphed, with "." and "..." expanded as CloudWatch does.
	graphed := map[string]bool{}
	for _, w := range doc.Widgets {
		if w.Type != "metric" {
			continue
		}
		if w.Properties.Region != "<AWS::Region>" {
			t.Errorf("%s: a widget's region is %q, want ${AWS::Region}", dashboards[0], w.Properties.Region)
		}
		var prev []string
		for _, m := range w.Properties.Metrics {
			var fields []string
			for _, f := range m {
				if s, ok := f.(string); ok {
					fields = append(fields, s)
				}
			}
			if len(fields) > 0 && fields[0] == "..." {
				fields = append(slices.Clone(prev[:max(0, len(prev)-len(fields)+1)]), fields[1:]...)
			}
			for i := range fields {
				if fields[i] == "." && i < len(prev) {
					fields[i] = prev[i]
				}
			}
			prev = fields
			graphed[strings.Join(fields, " ")] = true
		}
	}
	for _, w := range alarmMetrics(t) {
		key := w.Namespace + " " + w.Metric
		for _, dim := range sortedKeys(w.Dimensions) {
			v := w.Dimensions[dim]
			name, _ := ref(v)
			if res, attr, ok := getAtt(v); ok {
				name = res + "." + attr
			}
			key += " " + dim + " <" + name + ">"
		}
		if !graphed[key] {
			t.Errorf("%s: the dashboard does not graph %s, which %s watches", dashboards[0], key, w.Alarm)
		}
	}
}
