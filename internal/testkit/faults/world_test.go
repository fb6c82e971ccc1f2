package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/aws/sqsbatch"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/faults"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// provider is a scripted upstream over real HTTP: every job succeeds on its
// third read, with outputs served from the same host.
type provider struct {
	srv   *httptest.Server
	seq   atomic.Int64
	mu    sync.Mutex
	reads map[string]int
	kinds map[string]string
	png   []byte
	mp4   []byte
}

func newProvider(t *testing.T) *provider {
	p := &provider{reads: map[string]int{}, kinds: map[string]string{}}
	var buf bytes.Buffer
	png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4)))
	p.png = buf.Bytes()
	if p.mp4, _ = os.ReadFile(clipPath(t)); p.mp4 == nil {
		t.Fatal("no test clip")
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/files/"):
		if strings.HasSuffix(r.URL.Path, ".mp4") {
			w.Write(p.mp4)
		} else {
			w.Write(p.png)
		}
		return
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
		w.Write([]byte(`{"id":"x","status":"canceled"}`))
		return
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		w.Write([]byte(`{"latest_version":{"openapi_schema":{"components":{"schemas":{"Input":{"properties":` +
			`{"prompt":{"type":"string"},"num_outputs":{"type":"integer"},"seconds":{"type":"integer"}}}}}}}}`))
		return
	case r.Method == http.MethodGet && r.URL.Path == "/v1/predictions":
		w.Write([]byte(`{"next":null,"results":[]}`))
		return
	case r.Method == http.MethodPost:
		var body struct {
			Input map[string]any `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		id := fmt.Sprintf("job%d", p.seq.Add(1))
		p.kinds[id] = "png"
		if _, video := body.Input["seconds"]; video || strings.Contains(r.URL.Path, "beta") {
			p.kinds[id] = "mp4"
		}
		n, _ := body.Input["num_outputs"].(float64)
		if n > 1 {
			p.kinds[id] += fmt.Sprintf("*%d", int(n))
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q,"status":"starting"}`, id)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/v1/predictions/")
	p.reads[id]++
	if p.reads[id] < 3 {
		fmt.Fprintf(w, `{"id":%q,"status":"processing"}`, id)
		return
	}
	ext, count := p.kinds[id], 1
	if i := strings.IndexByte(ext, '*'); i > 0 {
		fmt.Sscan(ext[i+1:], &count)
		ext = ext[:i]
	}
	outs := make([]string, count)
	for i := range outs {
		outs[i] = fmt.Sprintf("%s/files/%s-%d.%s", p.srv.URL, id, i, ext)
	}
	raw, _ := json.Marshal(outs)
	fmt.Fprintf(w, `{"id":%q,"status":"succeeded","output":%s}`, id, raw)
}

var (
	clipOnce sync.Once
	clipFile string
	clipErr  error
)

// clipPath is a tiny real mp4 (made once with ffmpeg).
func clipPath(t *testing.T) string {
	clipOnce.Do(func() {
		dir, err := os.MkdirTemp("", "faults-clip-")
		if err != nil {
			clipErr = err
			return
		}
		clipFile = dir + "/clip.mp4"
		clipErr = makeClip(clipFile)
	})
	if clipErr != nil {
		t.Fatalf("make a test clip: %v", clipErr)
	}
	return clipFile
}

// msg is a message in the test queue.
type msg struct {
	id        int
	body      string
	visibleAt time.Time
	receives  int
}

// sqsQueue stands in for SQS: messages become visible after their delay; a
// message whose delivery crashed or failed comes back after the visibility
// timeout, and moves to the dead letters after five receives.
type sqsQueue struct {
	mu   sync.Mutex
	now  func() time.Time
	seq  int
	msgs []*msg
	sent []generation.PollMessage
	// arrived hears of a message sent, so that a drain waiting on an empty
	// queue wakes for it.
	arrived chan struct{}
}

func (q *sqsQueue) Send(_ context.Context, body []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	q.msgs = append(q.msgs, &msg{id: q.seq, body: string(body), visibleAt: q.now().Add(delay)})
	var m generation.PollMessage
	json.Unmarshal(body, &m)
	q.sent = append(q.sent, m)
	select {
	case q.arrived <- struct{}{}:
	default:
	}
	return nil
}

func (q *sqsQueue) take() *msg {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) == 0 {
		return nil
	}
	sort.SliceStable(q.msgs, func(i, j int) bool { return q.msgs[i].visibleAt.Before(q.msgs[j].visibleAt) })
	m := q.msgs[0]
	q.msgs = q.msgs[1:]
	return m
}

func (q *sqsQueue) putBack(m *msg) {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
}

// Timing as in the template, scaled down: the lease is shorter than the
// visibility timeout, which is much shorter than an image's deadline.
const (
	visibility  = time.Minute
	pollLease   = 30 * time.Second
	maxReceives = 5
)

var errRedeliver = errors.New("the handler reported a batch item failure")

// shared are the parts every world reuses: the provider and the bucket.
type shared struct {
	provider *provider
	objects  *objectstore.Store
	bucket   *s3bucket.Bucket
	host     string
}

func newShared(t *testing.T) *shared {
	ctx := context.Background()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	p := newProvider(t)
	return &shared{provider: p, objects: objects, bucket: objects.MediaBucket(), host: p.srv.Listener.Addr().String()}
}

// world is one account's service with every adapter wrapped, on its own
// store and clock.
type world struct {
	t       *testing.T
	in      *faults.Injector
	inner   store.Store
	st      *faults.Store
	q       *sqsQueue
	mu      sync.Mutex
	clock   time.Time
	svc     *generation.Service
	sweeper *sweeper.Sweeper
	bucket  *s3bucket.Bucket
	user    string
	granted decimal.Decimal
	dead    int
	ends    []string // how the workflow executions ended
}

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

// router routes every variant to the scripted provider, its client
// wrapped with the injector.
func (sh *shared) router(t *testing.T, in *faults.Injector) *upstream.Router {
	r, err := upstream.NewRouter(routing.Single("scripted", routing.ProtocolReplicate, sh.provider.srv.URL, []string{sh.host}),
		func(*routing.Upstream) (string, error) { return "tok", nil }, nil, upstream.Tuning{Attempts: 2, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.Wrap(func(_ string, p upstream.Provider) upstream.Provider { return &faults.Upstream{Provider: p, In: in} })
	return r
}

func newWorld(t *testing.T, sh *shared, inner store.Store) *world {
	t.Helper()
	w := &world{t: t, in: faults.New(), inner: inner, clock: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
		bucket: sh.bucket, granted: decimal.NewFromInt(1000)}
	w.st = &faults.Store{Inner: inner, In: w.in}
	w.q = &sqsQueue{now: w.now, arrived: make(chan struct{}, 1)}
	w.svc = &generation.Service{
		Store:     w.st,
		Upstreams: sh.router(t, w.in),
		Queue:     &faults.Queue{Inner: w.q, In: w.in},
		Copier: &media.Copier{Bucket: &faults.Bucket{Inner: sh.bucket, In: w.in}, HTTP: http.DefaultClient,
			AllowedHosts: []string{sh.host}, MaxBytes: 1 << 20, AllowLoopback: true},
		Outputs:  &faults.Bucket{Inner: sh.bucket, In: w.in},
		Prices:   pricing.Default(),
		Settings: generation.Settings{PollLease: pollLease, Now: w.now, Log: quiet()},
	}
	w.sweeper = &sweeper.Sweeper{Store: w.st, Now: w.now, Log: quiet()}
	acct, err := (&accounts.Service{Store: inner}).CreateAccount(context.Background(),
		accounts.NewAccount{Plan: domain.PlanPro, Credits: w.granted})
	if err != nil {
		t.Fatal(err)
	}
	w.user = acct.UserID
	return w
}

func openSQLite(t *testing.T) store.Store {
	st, err := sqlitestore.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func (w *world) now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.clock
}

func (w *world) advanceTo(t time.Time) {
	w.mu.Lock()
	if t.After(w.clock) {
		w.clock = t
	}
	w.mu.Unlock()
}

// drain delivers queued polls until none is left, as SQS and the poller
// would: one message per event, redelivered after the visibility timeout
// when its handler crashed or reported it failed.
func (w *world) drain() { w.drainUntil(nil) }

// drainUntil is drain while work may still enqueue polls: until stop is
// closed it waits for messages on an empty queue instead of returning.
func (w *world) drainUntil(stop <-chan struct{}) {
	ctx := context.Background()
	for steps := 0; ; steps++ {
		if steps > 2000 {
			w.t.Errorf("the queue never empties: %d messages left", len(w.q.msgs))
			return
		}
		m := w.q.take()
		if m == nil {
			if stop == nil {
				return
			}
			select {
			case <-stop:
				stop = nil // a last look: the work may have enqueued as it ended
			case <-w.q.arrived:
			}
			steps--
			continue
		}
		w.advanceTo(m.visibleAt)
		m.receives++
		crashed, err := faults.Run(func() error {
			resp, err := sqsbatch.Handler(w.svc.HandleBatch)(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint(m.id), Body: m.body}}})
			if err == nil && len(resp.BatchItemFailures) > 0 {
				err = errRedeliver
			}
			return err
		})
		if !crashed && err == nil {
			continue
		}
		if m.receives >= maxReceives {
			w.dead++
			continue
		}
		m.visibleAt = w.now().Add(visibility)
		w.q.putBack(m)
	}
}

// sweep runs the sweeper after the longest deadline and its grace, again
// on its next schedule when a run crashed or failed.
func (w *world) sweep() {
	w.advanceTo(w.now().Add(generation.DefaultVideoDeadline + sweeper.DefaultGrace + time.Minute))
	for i := 0; i < 3; i++ {
		crashed, err := faults.Run(func() error { _, err := w.sweeper.Sweep(context.Background()); return err })
		if !crashed && err == nil {
			return
		}
		w.advanceTo(w.now().Add(time.Minute))
	}
	w.t.Error("the sweeper failed three runs in a row")
}

// check asserts the invariants: granted = balance + held + captured, no
// hold left open, each hold settled exactly once, every record final, the
// captured credits exactly those of the completed work, every output
// URL's object in the bucket, and no output of failed work. It returns the
// final statuses.
func (w *world) check(records func(id string) (status domain.Status, credits decimal.Decimal, urls []string, found bool)) map[string]domain.Status {
	t := w.t
	t.Helper()
	ctx := context.Background()
	a, err := w.inner.GetAccount(ctx, w.user)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Granted.Equal(w.granted) || !a.Granted.Equal(a.Balance.Add(a.Held).Add(a.Captured)) {
		t.Errorf("granted %s != balance %s + held %s + captured %s", a.Granted, a.Balance, a.Held, a.Captured)
	}
	holds, err := w.inner.AccountHolds(ctx, w.user)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Held.IsZero() || len(holds) != 0 {
		t.Errorf("holds left open: held %s, %v", a.Held, holds)
	}
	settled := w.in.Settled()
	captured := decimal.Zero
	statuses := map[string]domain.Status{}
	for _, id := range w.in.Held() {
		if settled[id] != 1 {
			t.Errorf("hold %s settled %d times, want exactly once", id, settled[id])
		}
		status, credits, urls, found := records(id)
		if !found {
			statuses[id] = "missing"
			continue
		}
		statuses[id] = status
		switch status {
		case domain.StatusCompleted:
			captured = captured.Add(credits)
			if len(urls) == 0 {
				t.Errorf("%s completed without outputs", id)
			}
		case domain.StatusFailed:
			// Refunded work keeps no output (a generation's, or a long
			// video's final video), whatever call failed while finishing.
			if keys, err := w.bucket.Keys(ctx, media.GenerationPrefix(id)); err != nil || len(keys) != 0 {
				t.Errorf("failed %s keeps outputs %v (%v)", id, keys, err)
			}
			if ok, err := w.bucket.Exists(ctx, media.FinalVideoKey(id)); err != nil || ok {
				t.Errorf("failed %s keeps its final video (%v)", id, err)
			}
		default:
			t.Errorf("%s is still %s", id, status)
		}
		for _, u := range urls {
			key := strings.TrimPrefix(u, w.bucket.PublicBaseURL+"/")
			if ok, err := w.bucket.Exists(ctx, key); err != nil || !ok {
				t.Errorf("output %s of %s is not in the bucket (%v)", u, id, err)
			}
		}
	}
	if !a.Captured.Equal(captured) {
		t.Errorf("captured %s, but the completed work costs %s", a.Captured, captured)
	}
	// What `mediagen ledger verify` checks: the journal replays to the
	// account's totals, each work held once and settled once.
	v, err := ledger.Verify(ctx, w.inner, w.user)
	if err != nil {
		t.Fatalf("verify ledger: %v", err)
	}
	for _, d := range v.Discrepancies {
		t.Errorf("ledger verify: entry %d: %s", d.Seq, d.Problem)
	}
	return statuses
}

func (w *world) generationRecord(id string) (domain.Status, decimal.Decimal, []string, bool) {
	g, err := w.inner.GetGeneration(context.Background(), id)
	if errors.Is(err, domain.ErrNotFound) {
		return "", decimal.Zero, nil, false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return g.Status, g.CreditsUsed, g.OutputURLs, true
}

// checkChain asserts that duplicates never multiply polls: each attempt of
// a generation is enqueued at most twice (the second by a redelivery after
// a crash), and only one attempt ever twice.
func (w *world) checkChain() {
	w.t.Helper()
	count := map[string]int{}
	for _, m := range w.q.sent {
		count[fmt.Sprintf("%s/%d", m.GenerationID, m.Attempt)]++
	}
	doubled := 0
	for k, n := range count {
		if n > 2 {
			w.t.Errorf("poll %s enqueued %d times", k, n)
		}
		if n == 2 {
			doubled++
		}
	}
	if doubled > 1 {
		w.t.Errorf("%d polls enqueued twice; a single fault may double one", doubled)
	}
	if w.dead > 0 {
		w.t.Errorf("%d poll messages dead-lettered", w.dead)
	}
}
