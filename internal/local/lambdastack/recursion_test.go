package lambdastack

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/localsqs"
)

// Lambda's recursive-loop guard on the SQS event source mappings. A
// generation that waits for an upstream slot polls again every
// generation.SlotWait (1 s): with the simulator's one slot held by a
// generation whose job takes long, the waiting generation's poll chain
// invokes the poller once a second, each time through PollQueue, in one
// X-Ray trace.

// slotWaitStack starts a stack whose simulator takes latency per job and
// runs one job at a time (max_concurrent 1), with edit applied to the
// expanded template; its log is kept in the returned buffer.
func slotWaitStack(t *testing.T, name string, latency time.Duration, edit func(map[string]any)) (*Local, *lockedBuffer) {
	t.Helper()
	requireTools(t)
	cfg := testConfig(t, name)
	cfg.SimulatorLatency = latency
	cfg.Routing = routing.Default()
	cfg.Routing.Upstreams["simulator"].MaxConcurrent = 1
	cfg.Edit = edit
	logs := &lockedBuffer{}
	cfg.Log = slog.New(slog.NewJSONHandler(logs, nil))
	t.Cleanup(func() { os.RemoveAll(cfg.Dir) })
	l, err := StartLocal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, logs
}

// With RecursiveLoop left at its default (Terminate: the template's
// `RecursiveLoop: Allow` taken off the poller), the waiting generation's
// chain is stopped where AWS stops it: the poller is invoked 16 times by
// the chain, the 17th message does not invoke it but lands in PollQueue's
// dead-letter queue, with the trace header that counted 16, and the stack
// logs the detection.
func TestATerminatedPollChainIsStoppedAtItsSeventeenthInvocation(t *testing.T) {
	t.Parallel()
	removed := false
	l, logs := slotWaitStack(t, "loop-terminate", 90*time.Second, func(doc map[string]any) {
		fn, _ := doc["Resources"].(map[string]any)["PollerFunction"].(map[string]any)
		props, _ := fn["Properties"].(map[string]any)
		if props["RecursiveLoop"] == localsqs.RecursiveLoopAllow {
			delete(props, "RecursiveLoop")
			removed = true
		}
	})
	if !removed {
		t.Fatal("the expanded template's PollerFunction has no RecursiveLoop: Allow to remove")
	}
	holder := generateImage(t, l, "the slot holder")
	waiter := generateImage(t, l, "the slot waiter")

	poller := l.Functions()["PollerFunction"]
	key := localsqs.FunctionKey(poller.Name)
	dlq := sqs.NewFromConfig(l.AdminConfig())
	deadline := time.Now().Add(90 * time.Second)
	var stopped *sqstypes.Message
	for stopped == nil && time.Now().Before(deadline) {
		out, err := dlq.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(l.Ref("PollDeadLetterQueue")),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range out.Messages {
			if strings.Contains(aws.ToString(msg.Body), waiter) {
				stopped = &msg
			}
		}
	}
	if stopped == nil {
		t.Fatalf("no poll message of the waiting generation %s reached PollDeadLetterQueue in 90 s (the poller's deepest chain: %d invocations; the holder %s)\n%s",
			waiter, poller.ChainDepth(), holder, l.logsOf("PollerFunction"))
	}
	lineage, ok := localsqs.ParseTraceHeader(stopped.Attributes[attrTraceHeader])
	if !ok || lineage.Counts[key] != localsqs.MaxChainInvocations {
		t.Errorf("the stopped message's trace header %q counts %d poller invocations, want %d",
			stopped.Attributes[attrTraceHeader], lineage.Counts[key], localsqs.MaxChainInvocations)
	}
	if got := poller.ChainDepth(); got != localsqs.MaxChainInvocations {
		t.Errorf("one chain invoked the poller %d times, want at most %d", got, localsqs.MaxChainInvocations)
	}
	if !strings.Contains(logs.String(), "recursive loop detected") {
		t.Errorf("the stack did not log the detection:\n%s", logs.String())
	}
}

// With the template as shipped (the poller's RecursiveLoop: Allow), a
// chain past 16 invocations runs on: the waiting generation's slot polls
// and then its job's polls invoke the poller more than 16 times in one
// trace, and both generations complete with nothing in the dead-letter
// queue.
func TestAnAllowedPollChainRunsPastSixteenInvocations(t *testing.T) {
	t.Parallel()
	l, _ := slotWaitStack(t, "loop-allow", 25*time.Second, nil)
	holder := generateImage(t, l, "the slot holder")
	waiter := generateImage(t, l, "the slot waiter")
	for _, id := range []string{holder, waiter} {
		if view := waitStatusAs(t, l, l.Dev.APIKey, "/api/generations/status/"+id, 150*time.Second); view["status"] != "completed" {
			t.Fatalf("generation %s ended %v: %v\n%s", id, view["status"], view, l.logsOf("PollerFunction"))
		}
	}
	poller := l.Functions()["PollerFunction"]
	t.Logf("the deepest chain invoked the poller %d times", poller.ChainDepth())
	if got := poller.ChainDepth(); got <= localsqs.MaxChainInvocations {
		t.Errorf("the deepest chain invoked the poller %d times, want more than %d (the waiter's slot polls and job polls)", got, localsqs.MaxChainInvocations)
	}
	out, err := sqs.NewFromConfig(l.AdminConfig()).ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(l.Ref("PollDeadLetterQueue")), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) > 0 {
		t.Errorf("PollDeadLetterQueue holds %d messages, want none: %v", len(out.Messages), aws.ToString(out.Messages[0].Body))
	}
}

// lockedBuffer is a log buffer safe for the stack's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// generateImage creates one image generation with the dev account's key
// and answers its id.
func generateImage(t *testing.T, l *Local, prompt string) string {
	t.Helper()
	id, _ := generate(t, l, l.Dev.APIKey, imageRequest(prompt))
	return id
}
