// Package localsqs is the local runtime's stand-in for SQS: an in-process queue
// with per-message delay, batches delivered as events.SQSEvent to the same
// handler the poller Lambda runs, partial batch failures redelivered after a
// visibility timeout, and a dead-letter list after too many receives.
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

	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/webhook"
)

// The local queue stands in for SQS as the use cases' queues.
var (
	_ generation.Queue = (*Queue)(nil)
	_ longstory.Queue  = (*Queue)(nil)
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
}

type message struct {
	id        string
	body      string
	visibleAt time.Time
	receives  int
	sentAt    time.Time
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
	return &Queue{cfg: cfg, handler: handler, wake: make(chan struct{}, 1)}
}

// Send enqueues body for delivery after delay, like SQS SendMessage.
func (q *Queue) Send(_ context.Context, body []byte, delay time.Duration) error {
	q.mu.Lock()
	q.seq++
	now := q.cfg.Now()
	sum := sha256.Sum256([]byte(strconv.Itoa(q.seq) + now.String()))
	q.pending = append(q.pending, &message{id: hex.EncodeToString(sum[:8]), body: string(body), visibleAt: now.Add(delay), sentAt: now})
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

// safeHandle turns a handler panic into a failed batch, as Lambda would.
func (q *Queue) safeHandle(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return q.handler(ctx, ev)
}
