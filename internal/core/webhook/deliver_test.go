package webhook_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// claimStore records attempts in memory and claims them in the embedded
// store, as the runtime does.
type claimStore struct {
	*attemptStore
	*sqlitestore.Store
}

func (s claimStore) EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error) {
	return s.attemptStore.EnsureWebhookSecret(ctx, userID, candidate)
}

func (s claimStore) AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error {
	return s.attemptStore.AddWebhookAttempt(ctx, kind, id, a)
}

func (s claimStore) ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	return s.Store.ClaimIdempotencyKey(ctx, r)
}

// delayQueue keeps the delays of the messages sent to it; sent, when set,
// hears of each.
type delayQueue struct {
	mu     sync.Mutex
	delays []time.Duration
	sent   chan struct{}
}

func (q *delayQueue) Send(_ context.Context, _ []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.delays = append(q.delays, delay)
	if q.sent != nil {
		q.sent <- struct{}{}
	}
	return nil
}

// TestAnEventEnqueuedTwiceIsPostedOnce: the provider's callback and a poll
// can both see a generation end and enqueue its event, and SQS delivers at
// least once; deliveries of one attempt running at once make it once (the
// others look again when its claim ends), and a repeat after it was made is
// dropped. Once the claim's lease is over, a delivery that died holding it
// is taken over.
func TestAnEventEnqueuedTwiceIsPostedOnce(t *testing.T) {
	var posts atomic.Int32
	q := &delayQueue{sent: make(chan struct{}, 16)}
	// The first post is held until the four other deliveries have found
	// its attempt claimed and sent their messages to look again: they
	// arrive while it is in flight. (At most a minute: a delivery that
	// posts instead is counted below.)
	others := make(chan struct{})
	go func() {
		for range 4 {
			<-q.sent
		}
		close(others)
	}()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if posts.Add(1) == 1 {
			select {
			case <-others:
			case <-time.After(time.Minute):
			}
		}
	}))
	defer receiver.Close()
	db, err := sqlitestore.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := claimStore{attemptStore: &attemptStore{}, Store: db}
	d := &webhook.Deliverer{Records: oneRecord{url: receiver.URL}, Store: st, Queue: q,
		Client: webhook.SafeClient(portOf(t, receiver.URL)), Log: slog.New(slog.DiscardHandler)}
	m := webhook.Message{Kind: domain.WorkGeneration, ID: "g1", Event: "generation.completed", Attempt: 1}

	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Deliver(context.Background(), m); err != nil {
				t.Errorf("Deliver: %v", err)
			}
		}()
	}
	wg.Wait()
	if got := posts.Load(); got != 1 {
		t.Errorf("five deliveries at once posted %d times, want once", got)
	}
	if len(st.attempts) != 1 || !st.attempts[0].Delivered {
		t.Errorf("attempts recorded %+v, want one, delivered", st.attempts)
	}
	if len(q.delays) != 4 {
		t.Errorf("the four that found the attempt claimed sent %d messages, want 4 (to look again)", len(q.delays))
	}
	for _, delay := range q.delays {
		if delay < time.Second || delay > webhook.Timeout+time.Minute {
			t.Errorf("a claimed attempt is looked at again after %v, want when its lease ends", delay)
		}
	}

	// A delivery that died after its claim: the next one waits out the
	// lease, then makes the attempt.
	died := m
	died.ID, died.Attempt = "g2", 1
	now := time.Now()
	d.Now = func() time.Time { return now }
	d.Records = oneRecord{url: receiver.URL}
	if err := d.Deliver(context.Background(), died); err != nil {
		t.Fatal(err)
	}
	before := posts.Load()
	st.attempts = nil // as if the first one died before recording
	if err := d.Deliver(context.Background(), died); err != nil || posts.Load() != before {
		t.Errorf("within the lease: err %v, %d more posts; want none", err, posts.Load()-before)
	}
	d.Now = func() time.Time { return now.Add(webhook.Timeout + time.Minute) }
	if err := d.Deliver(context.Background(), died); err != nil || posts.Load() != before+1 {
		t.Errorf("after the lease: err %v, %d more posts; want one", err, posts.Load()-before)
	}
}
