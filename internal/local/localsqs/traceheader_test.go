package localsqs

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// A trace header's lineage survives the trip a poll chain makes: Lambda
// hands it to the invocation, the SDK sends it percent-encoded with
// SendMessage, SQS returns it as AWSTraceHeader, and Lambda reads the
// function's count from it.
func TestTraceHeaderCarriesTheLineage(t *testing.T) {
	poller, webhooks := FunctionKey("mg-PollerFunction"), FunctionKey("mg-WebhooksFunction")
	root := NewTraceRoot(time.Unix(1700000000, 0))
	tests := []struct {
		name   string
		header string
		want   Lineage
		ok     bool
	}{
		{"as handed to the invocation", Lineage{Trace: root, Counts: map[string]int{poller: 16, webhooks: 2}}.TraceHeader(),
			Lineage{Trace: root, Counts: map[string]int{poller: 16, webhooks: 2}}, true},
		{"as the SDK sends it", strings.ReplaceAll(Lineage{Trace: root, Counts: map[string]int{poller: 3, webhooks: 1}}.TraceHeader(), "|", "%7C"),
			Lineage{Trace: root, Counts: map[string]int{poller: 3, webhooks: 1}}, true},
		{"as seen in the wild", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1;Lineage=a87bd80c:1|68fd508a:5",
			Lineage{Trace: "1-5759e988-bd862e3fe1be46a994272793", Counts: map[string]int{"a87bd80c": 1, "68fd508a": 5}}, true},
		{"a chain's first message", Lineage{Trace: root}.TraceHeader(), Lineage{Trace: root}, true},
		{"no root", "Parent=1e4dbd311c45e826;Sampled=0", Lineage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseTraceHeader(tt.header)
			if ok != tt.ok || got.Trace != tt.want.Trace || !maps.Equal(got.Counts, tt.want.Counts) {
				t.Errorf("ParseTraceHeader(%q) = %+v, %v; want %+v, %v", tt.header, got, ok, tt.want, tt.ok)
			}
		})
	}
	if !strings.HasPrefix(root, "1-6553f100-") || len(root) != len("1-6553f100-")+24 {
		t.Errorf("NewTraceRoot = %q, want 1-<epoch hex>-<24 hex>", root)
	}
	if got := (Lineage{Trace: root, Counts: map[string]int{poller: 1}}).Invoked(poller).Counts[poller]; got != 2 {
		t.Errorf("Invoked counts %d invocations, want 2", got)
	}
}
