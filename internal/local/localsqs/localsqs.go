// Package localsqs is the local runtime's stand-in for SQS: an in-process queue
// with per-message delay, batches delivered as events.SQSEvent to the same
// handler the poller Lambda runs, partial batch failures redelivered after a
// visibility timeout, and a dead-letter list after too many receives. It
// also applies Lambda's recursive-loop guard to the consuming function (see
// Lineage).
package localsqs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// The local queue stands in for SQS as the use cases' queues.
var (
	_ generation.Queue = (*Queue)(nil)
	_ longform.Queue   = (*Queue)(nil)
	_ webhook.Queue    = (*Queue)(nil)
)

// BatchHandler is the poller's Lambda handler.
type BatchHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Config tunes the queue like the template tunes SQS.
type Config struct {
	// BatchSize is the most messages one delivery carries (SQS: up to 10).
	BatchSize int
	// Visibility is how long a failed message waits before redelivery.
	Visibility time.Duration
	// MaxReceives moves a message to the dead letters after that many tries.
	MaxReceives int
	// Workers is how many batches are delivered at once.
	Workers int
	Log     *slog.Logger
	// Now and the wake-up clock can be replaced in tests.
	Now func() time.Time
	// Function names the consuming function (its logical ID in
	// template.yaml), whose invocations the recursive-loop guard counts.
	Function string
	// RecursiveLoop is the consuming function's RecursiveLoop setting in
	// template.yaml: RecursiveLoopAllow, or RecursiveLoopTerminate (the
	// default, as in AWS), which stops a chain at MaxChainInvocations.
	RecursiveLoop string
}

// The values of a function's RecursiveLoop property.
const (
	RecursiveLoopAllow     = "Allow"
	RecursiveLoopTerminate = "Terminate"
)

// MaxChainInvocations is how many times Lambda lets one chain of requests
// invoke the same function before its recursive-loop guard stops it (AWS
// documents "about 16"): the message that would invoke it once more goes
// to the dead-letter queue instead.
const MaxChainInvocations = 16

// Lineage is what the X-Ray trace header carries through a chain of
// requests: the chain's id and how many times each function was invoked in
// it. In AWS the Go SDK sends the invocation's _X_AMZN_TRACE_ID with every
// SendMessage, SQS keeps it as the message's AWSTraceHeader, and Lambda
// counts the consuming function's invocations in it; here a delivery puts
// the invocation's lineage in its context and Send copies it from there.
type Lineage struct {
	Trace  string
	Counts map[string]int
}

type lineageKey struct{}

// WithLineage is ctx carrying an invocation's lineage.
func withLineage(ctx context.Context, l Lineage) context.Context {
	return context.WithValue(ctx, lineageKey{}, l)
}

// LineageFrom is the lineage of the invocation ctx belongs to, if any.
func lineageFrom(ctx context.Context) (Lineage, bool) {
	l, ok := ctx.Value(lineageKey{}).(Lineage)
	return l, ok
}

// Invoked is the lineage of an invocation of function by a message of l:
// its count of function's invocations one higher.
func (l Lineage) Invoked(function string) Lineage {
	counts := make(map[string]int, len(l.Counts)+1)
	for f, n := range l.Counts {
		counts[f] = n
	}
	counts[function]++
	return Lineage{Trace: l.Trace, Counts: counts}
}

type message struct {
	id        string
	body      string
	visibleAt time.Time
	receives  int
	sentAt    time.Time
	lineage   Lineage
}

// Queue is the in-process queue. Start it with Run.
type Queue struct {
	cfg     Config
	handler BatchHandler

	mu      sync.Mutex
	pending []*message
	dead    []*message
	seq     int
	wake    chan struct{}
	running int
	// deleted counts the messages handled and so deleted (SQS's
	// NumberOfMessagesDeleted).
	deleted int
}

// New makes a queue delivering to handler.
func New(handler BatchHandler, cfg Config) *Queue {
	if cfg.BatchSize <= 0 || cfg.BatchSize > 10 {
		cfg.BatchSize = 10
	}
	if cfg.Visibility <= 0 {
		cfg.Visibility = 30 * time.Second
	}
	if cfg.MaxReceives <= 0 {
		cfg.MaxReceives = 5
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RecursiveLoop == "" {
		cfg.RecursiveLoop = RecursiveLoopTerminate
	}
	return &Queue{cfg: cfg, handler: handler, wake: make(chan struct{}, 1)}
}

// Send enqueues body for delivery after delay, like SQS SendMessage. The
// message carries the lineage of the invocation sending it (ctx), or starts
// a chain of its own.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	q.mu.Lock()
	q.seq++
	now := q.cfg.Now()
	sum := sha256.Sum256([]byte(strconv.Itoa(q.seq) + now.String()))
	id := hex.EncodeToString(sum[:8])
	lineage, ok := lineageFrom(ctx)
	if !ok {
		lineage = Lineage{Trace: "chain-" + id}
	}
	q.pending = append(q.pending, &message{id: id, body: string(body), visibleAt: now.Add(delay), sentAt: now, lineage: lineage})
	q.mu.Unlock()
	q.poke()
	return nil
}

func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len is the number of messages waiting or in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) + q.running
}

// Deleted is how many messages were handled and so deleted from the
// queue (SQS's NumberOfMessagesDeleted): the work done, where Len is the
// work left, which a handler that sends the next message keeps level.
func (q *Queue) Deleted() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.deleted
}

// DeliverDue delivers the messages visible now, one batch after another in
// the caller's goroutine, until none is left visible (a message sent with no
// delay meanwhile is delivered too), and says how many deliveries it made.
// A test that moves a fake clock drives the queue with it instead of Run.
func (q *Queue) DeliverDue(ctx context.Context) int {
	n := 0
	for {
		batch, _ := q.take()
		if len(batch) == 0 {
			return n
		}
		q.deliver(ctx, batch)
		n += len(batch)
	}
}

// NextVisible is when the next waiting message becomes visible; false when
// none waits.
func (q *Queue) NextVisible() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return time.Time{}, false
	}
	next := q.pending[0].visibleAt
	for _, m := range q.pending[1:] {
		if m.visibleAt.Before(next) {
			next = m.visibleAt
		}
	}
	return next, true
}

// DeadLetters are the bodies of messages that failed MaxReceives times.
func (q *Queue) DeadLetters() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, len(q.dead))
	for i, m := range q.dead {
		out[i] = m.body
	}
	return out
}

// Run delivers messages until ctx ends, then waits for batches in flight.
func (q *Queue) Run(ctx context.Context) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, q.cfg.Workers)
	defer wg.Wait()
	for {
		batch, wait := q.take()
		if len(batch) > 0 {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				q.putBack(batch)
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				q.deliver(ctx, batch)
			}()
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-q.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// take removes up to BatchSize visible messages, or says how long until the
// next one becomes visible.
func (q *Queue) take() ([]*message, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Now()
	sort.Slice(q.pending, func(i, j int) bool { return q.pending[i].visibleAt.Before(q.pending[j].visibleAt) })
	n := 0
	for n < len(q.pending) && n < q.cfg.BatchSize && !q.pending[n].visibleAt.After(now) {
		n++
	}
	if n == 0 {
		if len(q.pending) == 0 {
			return nil, time.Hour
		}
		return nil, q.pending[0].visibleAt.Sub(now)
	}
	batch := append([]*message(nil), q.pending[:n]...)
	q.pending = q.pending[n:]
	q.running += len(batch)
	return batch, 0
}

func (q *Queue) putBack(batch []*message) {
	q.mu.Lock()
	q.pending = append(q.pending, batch...)
	q.running -= len(batch)
	q.mu.Unlock()
}

func (q *Queue) deliver(ctx context.Context, batch []*message) {
	batch = q.guard(ctx, batch)
	if len(batch) == 0 {
		q.poke()
		return
	}
	// One invocation has one trace header: the deepest chain of the batch
	// (so a loop is never counted short).
	invocation := batch[0].lineage
	for _, m := range batch[1:] {
		if m.lineage.Counts[q.cfg.Function] > invocation.Counts[q.cfg.Function] {
			invocation = m.lineage
		}
	}
	ctx = withLineage(ctx, invocation.Invoked(q.cfg.Function))
	ev := events.SQSEvent{}
	for _, m := range batch {
		m.receives++
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: m.id, Body: m.body, EventSource: "aws:sqs", AWSRegion: "local",
			EventSourceARN: "arn:aws:sqs:local:000000000000:mediagen-poll",
			Attributes: map[string]string{
				"ApproximateReceiveCount": strconv.Itoa(m.receives),
				"SentTimestamp":           strconv.FormatInt(m.sentAt.UnixMilli(), 10),
			},
		})
	}
	failed := map[string]bool{}
	resp, err := q.safeHandle(ctx, ev)
	if err != nil {
		q.cfg.Log.WarnContext(ctx, "local queue: batch failed", "error", err, "messages", len(batch))
		for _, m := range batch {
			failed[m.id] = true
		}
	}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running -= len(batch)
	now := q.cfg.Now()
	for _, m := range batch {
		if !failed[m.id] {
			q.deleted++
			continue
		}
		if m.receives >= q.cfg.MaxReceives {
			q.dead = append(q.dead, m)
			q.cfg.Log.ErrorContext(ctx, "local queue: message moved to dead letters", "message_id", m.id, "receives", m.receives)
			continue
		}
		m.visibleAt = now.Add(q.cfg.Visibility)
		q.pending = append(q.pending, m)
	}
	q.poke()
}

// guard applies Lambda's recursive-loop guard: unless the function allows
// recursion, a message whose chain already invoked it MaxChainInvocations
// times is not delivered but moved to the dead letters, as AWS does. It
// returns the messages to deliver.
func (q *Queue) guard(ctx context.Context, batch []*message) []*message {
	if q.cfg.RecursiveLoop == RecursiveLoopAllow {
		return batch
	}
	keep := batch[:0:0]
	var stopped []*message
	for _, m := range batch {
		if m.lineage.Counts[q.cfg.Function] >= MaxChainInvocations {
			stopped = append(stopped, m)
			continue
		}
		keep = append(keep, m)
	}
	if len(stopped) == 0 {
		return keep
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range stopped {
		q.running--
		q.dead = append(q.dead, m)
		q.cfg.Log.ErrorContext(ctx, "local queue: recursive loop detected, message moved to dead letters",
			"function", q.cfg.Function, "message_id", m.id, "trace", m.lineage.Trace,
			"invocations", m.lineage.Counts[q.cfg.Function])
	}
	return keep
}

// safeHandle turns a handler panic into a failed batch, as Lambda would.
func (q *Queue) safeHandle(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return q.handler(ctx, ev)
}
