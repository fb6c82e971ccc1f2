package generation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// fakeUpstream is a scripted provider: each prediction's state is set by the
// test. It is a real HTTP server, so the real client talks to it.
type fakeUpstream struct {
	srv       *httptest.Server
	mu        sync.Mutex
	state     string // status every prediction reports
	outputs   []string
	logs      string // the predictions' logs, where Replicate's progress bars are
	createErr int    // HTTP status to answer creates with, 0 = accept
	getErr    int
	creates   atomic.Int32
	gets      atomic.Int32
	canceled  atomic.Int32
	file      []byte
	secret    string   // signs the callbacks (Replicate's webhook secret)
	created   [][]byte // the bodies of the creates
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	f := &fakeUpstream{state: upstream.StatusProcessing, secret: webhook.NewSecret()}
	var buf bytes.Buffer
	png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 8, 8)))
	f.file = buf.Bytes()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/files/"):
			w.Header().Set("Content-Type", "image/png")
			w.Write(f.file)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
			// The published schema: a count field, and typed inputs.
			w.Write([]byte(`{"latest_version":{"id":"v1","openapi_schema":{"components":{"schemas":{"Input":{"properties":` +
				`{"prompt":{"type":"string"},"num_outputs":{"type":"integer"},"seconds":{"type":"integer"}}}}}}}}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/webhooks/default/secret":
			w.Write([]byte(`{"key":"` + f.secret + `"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/predictions":
			w.Write([]byte(`{"next":null,"results":[{"id":"p1","webhook":"","created_at":"2020-01-01T00:00:00Z"}]}`))
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
			f.canceled.Add(1)
			w.Write([]byte(`{"id":"p1","status":"canceled"}`))
		case r.Method == http.MethodPost:
			f.creates.Add(1)
			body, _ := io.ReadAll(r.Body)
			f.created = append(f.created, body)
			if f.createErr != 0 {
				w.WriteHeader(f.createErr)
				w.Write([]byte(`{"detail":"provider down"}`))
				return
			}
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"id":"p1","status":"starting"}`))
		default:
			f.gets.Add(1)
			if f.getErr != 0 {
				w.WriteHeader(f.getErr)
				w.Write([]byte(`{"detail":"unavailable"}`))
				return
			}
			out, _ := json.Marshal(f.outputs)
			logs, _ := json.Marshal(f.logs)
			w.Write([]byte(`{"id":"p1","status":"` + f.state + `","output":` + string(out) + `,"logs":` + string(logs) + `,"error":"the model refused"}`))
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) set(state string, outputs ...string) {
	f.mu.Lock()
	f.state, f.outputs = state, outputs
	f.mu.Unlock()
}

// sentQueue records what the service enqueues.
type sentQueue struct {
	mu   sync.Mutex
	msgs []generation.PollMessage
	lag  []time.Duration
}

func (q *sentQueue) Send(_ context.Context, body []byte, delay time.Duration) error {
	var m generation.PollMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	q.mu.Lock()
	q.msgs, q.lag = append(q.msgs, m), append(q.lag, delay)
	q.mu.Unlock()
	return nil
}

type fixture struct {
	svc   *generation.Service
	store *sqlitestore.Store
	up    *fakeUpstream
	queue *sentQueue
	user  string
	now   *time.Time
}

func setup(t *testing.T) *fixture { t.Helper(); return setupWith(t, nil) }

// setupWith is setup with the routing changed by edit (nil: as it is).
func setupWith(t *testing.T, edit func(*routing.Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	up := newFakeUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	now := time.Now().UTC()
	f := &fixture{store: st, up: up, queue: &sentQueue{}, now: &now}
	rc := routing.Single("fake", routing.ProtocolReplicate, up.srv.URL, []string{u.Host})
	if edit != nil {
		edit(rc)
	}
	router, err := upstream.NewRouter(rc, func(*routing.Upstream) (string, error) { return "t", nil }, nil,
		upstream.Tuning{Attempts: 2, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = &generation.Service{
		Store:     st,
		Upstreams: router,
		Queue:     f.queue,
		Copier:    &media.Copier{Bucket: objects.MediaBucket(), HTTP: http.DefaultClient, AllowedHosts: []string{u.Host}, MaxBytes: 1 << 20, AllowLoopback: true},
		Outputs:   objects.MediaBucket(),
		Prices:    pricing.Default(),
		Settings:  generation.Settings{Now: func() time.Time { return *f.now }},
	}
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(100)})
	if err != nil {
		t.Fatal(err)
	}
	f.user = acct.UserID
	return f
}

const imageBody = `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a cat"},"image_count":2}`

// creator, reader and callbacks are the routes' use cases over the
// fixture's adapters, built as the wirings build them.
func (f *fixture) creator() *generation.Creator {
	return generation.NewCreator(f.svc.Store, f.svc.Upstreams, f.svc.Queue, f.svc.Slots, f.svc.Inputs, f.svc.Prices, f.svc.Settings)
}

func (f *fixture) reader() *generation.Reader {
	return generation.NewReader(f.svc.Store, f.svc.Slots, f.svc.Upstreams)
}

func (f *fixture) callbacks() *generation.Callbacks {
	return generation.NewCallbacks(f.svc.Store, f.svc.Upstreams, f.svc.Queue, f.svc.Settings)
}

func (f *fixture) account(t *testing.T) domain.Account {
	t.Helper()
	a, err := f.store.GetAccount(context.Background(), f.user)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *fixture) create(t *testing.T) domain.Generation {
	t.Helper()
	g, err := f.creator().Create(context.Background(), f.user, []byte(imageBody))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSubmissionFailureReleasesTheHoldAndLeavesNothingRunning(t *testing.T) {
	f := setup(t)
	f.up.createErr = http.StatusServiceUnavailable
	_, err := f.creator().Create(context.Background(), f.user, []byte(imageBody))
	if !errors.Is(err, generation.ErrUpstreamUnavailable) {
		t.Fatalf("Create = %v, want ErrUpstreamUnavailable", err)
	}
	a := f.account(t)
	if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Held.IsZero() {
		t.Errorf("after a refused submission: balance %s held %s", a.Balance, a.Held)
	}
	if left, _ := f.store.ProcessingGenerations(context.Background(), 10); len(left) != 0 {
		t.Errorf("%d generations left processing", len(left))
	}
	if len(f.queue.msgs) != 0 {
		t.Errorf("%d polls enqueued for a job that never started", len(f.queue.msgs))
	}
}

func TestRunningJobIsPolledAgainWithAGrowingDelay(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	if len(f.queue.msgs) != 1 || f.queue.msgs[0].GenerationID != g.UUID {
		t.Fatalf("enqueued %+v after create, want one poll of %s", f.queue.msgs, g.UUID)
	}
	for i := 0; i < 3; i++ {
		if err := f.svc.Poll(context.Background(), f.queue.msgs[len(f.queue.msgs)-1]); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.queue.msgs) != 4 || f.queue.msgs[3].Attempt != 3 {
		t.Fatalf("polls %+v, want attempts 0..3", f.queue.msgs)
	}
	for i := 1; i < len(f.queue.lag); i++ {
		if f.queue.lag[i] <= f.queue.lag[i-1] {
			t.Errorf("delays %v do not grow", f.queue.lag)
		}
	}
}

func TestConcurrentDuplicateDeliveriesCompleteAndCaptureOnce(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	held := f.account(t).Held
	f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
	f.deliverAtOnce(t, generation.PollMessage{GenerationID: g.UUID}, 12)
	got, _ := f.store.GetGeneration(context.Background(), g.UUID)
	if got.Status != domain.StatusCompleted || len(got.OutputURLs) != 2 {
		t.Fatalf("generation %s with %d outputs", got.Status, len(got.OutputURLs))
	}
	a := f.account(t)
	if !a.Captured.Equal(held) || !a.Held.IsZero() || !a.Balance.Equal(decimal.NewFromInt(100).Sub(held)) {
		t.Errorf("after 12 deliveries: balance %s held %s captured %s; want %s captured once", a.Balance, a.Held, a.Captured, held)
	}
	for _, u := range got.OutputURLs {
		if !strings.Contains(u, "/generations/"+g.UUID+"/") {
			t.Errorf("output %s is not under the generation's key", u)
		}
	}
}

// SQS delivers at least once: a poll message delivered twice, at once or one
// after the other, enqueues one next poll, not two.
func TestDuplicatePollDeliveriesEnqueueOneNextPoll(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	first := f.queue.msgs[0]
	var wg sync.WaitGroup
	var busy atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.svc.Poll(context.Background(), first)
			if errors.Is(err, generation.ErrPollBusy) {
				busy.Add(1)
			} else if err != nil {
				t.Errorf("Poll: %v", err)
			}
		}()
	}
	wg.Wait()
	// The ones that found another delivery running come back later.
	for i := 0; i < int(busy.Load()); i++ {
		if err := f.svc.Poll(context.Background(), first); err != nil {
			t.Errorf("redelivered Poll: %v", err)
		}
	}
	if len(f.queue.msgs) != 2 || f.queue.msgs[1].Attempt != 1 {
		t.Fatalf("after 8 deliveries of the first poll, enqueued %+v; want the first and one next poll", f.queue.msgs)
	}
	// The next poll, delivered twice in a row, again enqueues one.
	for i := 0; i < 2; i++ {
		if err := f.svc.Poll(context.Background(), f.queue.msgs[1]); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.queue.msgs) != 3 || f.queue.msgs[2].Attempt != 2 {
		t.Fatalf("enqueued %+v; want attempts 0, 1, 2", f.queue.msgs)
	}
	if got, _ := f.store.GetGeneration(context.Background(), g.UUID); got.Status != domain.StatusProcessing {
		t.Errorf("status %s, want processing", got.Status)
	}
}

func TestUpstreamFailureFailsTheGenerationAndReleases(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	f.up.set(upstream.StatusFailed)
	if err := f.svc.Poll(context.Background(), generation.PollMessage{GenerationID: g.UUID}); err != nil {
		t.Fatal(err)
	}
	got, _ := f.store.GetGeneration(context.Background(), g.UUID)
	if got.Status != domain.StatusFailed || got.Error != "upstream: the model refused" {
		t.Errorf("generation %s %q", got.Status, got.Error)
	}
	if a := f.account(t); !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Held.IsZero() {
		t.Errorf("balance %s held %s after a failure, want all back", a.Balance, a.Held)
	}
}

func TestPastItsDeadlineAGenerationTimesOutAndIsCanceledUpstream(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	*f.now = g.Deadline.Add(time.Second)
	if err := f.svc.Poll(context.Background(), generation.PollMessage{GenerationID: g.UUID}); err != nil {
		t.Fatal(err)
	}
	got, _ := f.store.GetGeneration(context.Background(), g.UUID)
	if got.Status != domain.StatusFailed || got.Error != domain.TimedOutError {
		t.Errorf("generation %s %q, want failed %q", got.Status, got.Error, domain.TimedOutError)
	}
	if f.up.canceled.Load() != 1 {
		t.Errorf("%d upstream cancels, want 1", f.up.canceled.Load())
	}
	if a := f.account(t); !a.Held.IsZero() || !a.Balance.Equal(decimal.NewFromInt(100)) {
		t.Errorf("balance %s held %s after a timeout", a.Balance, a.Held)
	}
}

func TestUnreachableUpstreamIsRetriedAFewTimesThenFails(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	f.up.getErr = http.StatusBadGateway
	m := generation.PollMessage{GenerationID: g.UUID}
	for i := 0; i < generation.MaxConsecutiveErrors; i++ {
		if err := f.svc.Poll(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		m = f.queue.msgs[len(f.queue.msgs)-1]
	}
	got, _ := f.store.GetGeneration(context.Background(), g.UUID)
	if got.Status != domain.StatusFailed || !strings.HasPrefix(got.Error, "upstream unreachable") {
		t.Errorf("after %d failed polls: %s %q", generation.MaxConsecutiveErrors, got.Status, got.Error)
	}
	if a := f.account(t); !a.Held.IsZero() {
		t.Errorf("held %s after giving up", a.Held)
	}
}

func TestRejectedOutputsFailWithAClearError(t *testing.T) {
	tests := []struct {
		name    string
		outputs func(f *fixture) []string
		says    string
	}{
		{"no output", func(*fixture) []string { return nil }, "returned no output"},
		{"fewer images than asked", func(f *fixture) []string { return []string{f.up.srv.URL + "/files/a.png"} }, "returned 1 outputs, 2 were asked for"},
		{"another host", func(*fixture) []string {
			return []string{"https://elsewhere.example/a.png", "https://elsewhere.example/b.png"}
		}, "not the upstream's"},
		{"empty URL", func(f *fixture) []string { return []string{"", ""} }, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			g := f.create(t)
			f.up.set(upstream.StatusSucceeded, tt.outputs(f)...)
			if err := f.svc.Poll(context.Background(), generation.PollMessage{GenerationID: g.UUID}); err != nil {
				t.Fatal(err)
			}
			got, _ := f.store.GetGeneration(context.Background(), g.UUID)
			if got.Status != domain.StatusFailed || !strings.Contains(got.Error, tt.says) {
				t.Errorf("generation %s %q, want failed saying %q", got.Status, got.Error, tt.says)
			}
			if a := f.account(t); !a.Held.IsZero() || !a.Balance.Equal(decimal.NewFromInt(100)) {
				t.Errorf("balance %s held %s", a.Balance, a.Held)
			}
		})
	}
}

func TestLookupFindsByUUIDOrIntegerAndHidesOthers(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	ctx := context.Background()
	for _, id := range []string{g.UUID, strings.ToUpper(g.UUID), "1"} {
		if got, err := f.reader().Lookup(ctx, f.user, id); err != nil || got.UUID != g.UUID {
			t.Errorf("Lookup(%s) = %s, %v", id, got.UUID, err)
		}
	}
	for _, id := range []string{g.UUID, "1"} {
		if _, err := f.reader().Lookup(ctx, "usr_other", id); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another owner's Lookup(%s) = %v, want ErrNotFound", id, err)
		}
	}
	for _, id := range []string{"abc", "0", "-1", "01", "1.5", "' OR 1=1 --", "$..*", strings.Repeat("9", 30)} {
		if _, err := f.reader().Lookup(ctx, f.user, id); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Lookup(%q) = %v, want ErrInvalid", id, err)
		}
	}
}

// A generation waiting for a capped upstream's slot is submitted once when
// the slot frees, however many deliveries of its ask run at once: each ask
// is a turn of its poll chain, so the others find the chain taken.
func TestDuplicateAsksOfAWaitingGenerationSubmitItOnce(t *testing.T) {
	f := setupWith(t, func(c *routing.Config) { c.Upstreams["fake"].MaxConcurrent = 1 })
	f.svc.Slots = f.store
	first := f.create(t)
	waiting := f.create(t)
	if waiting.UpstreamID != "" || f.up.creates.Load() != 1 {
		t.Fatalf("the second generation went upstream (%q, %d creates); want it waiting for the slot", waiting.UpstreamID, f.up.creates.Load())
	}
	ask := f.queue.msgs[len(f.queue.msgs)-1]
	if ask.GenerationID != waiting.UUID {
		t.Fatalf("the last message is for %s, want the waiting generation's ask", ask.GenerationID)
	}
	if err := f.store.ReleaseSlot(context.Background(), "fake", first.UUID); err != nil {
		t.Fatal(err)
	}

	f.deliverAtOnce(t, ask, 8)
	got, err := f.store.GetGeneration(context.Background(), waiting.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.UpstreamID == "" {
		t.Fatalf("the waiting generation was not submitted")
	}
	if n := f.up.creates.Load(); n != 2 {
		t.Errorf("%d paid jobs started upstream for two generations; want 2", n)
	}
	if n := f.up.canceled.Load(); n != 0 {
		t.Errorf("%d jobs canceled: a duplicate was started and then canceled", n)
	}
}

// deliverAtOnce delivers n copies of m at once, as SQS may, then delivers
// again each that found its poll busy, as SQS does after the visibility
// timeout.
func (f *fixture) deliverAtOnce(t *testing.T, m generation.PollMessage, n int) {
	t.Helper()
	var wg sync.WaitGroup
	var busy atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.svc.Poll(context.Background(), m)
			if errors.Is(err, generation.ErrPollBusy) {
				busy.Add(1)
			} else if err != nil {
				t.Errorf("Poll: %v", err)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < int(busy.Load()); i++ {
		if err := f.svc.Poll(context.Background(), m); err != nil {
			t.Errorf("redelivered Poll: %v", err)
		}
	}
}

// accountsDown is a store whose account reads fail while down is set.
type accountsDown struct {
	generation.Store
	down atomic.Bool
}

func (s *accountsDown) GetAccount(ctx context.Context, userID string) (domain.Account, error) {
	if s.down.Load() {
		return domain.Account{}, errors.New("store unavailable")
	}
	return s.Store.GetAccount(ctx, userID)
}

// Outputs copied but their retention unread (the account could not be
// read) are a failed poll like a failed read: polled again, counted as an
// error in a row, and completed by the next poll once the store answers.
func TestAnUnreadRetentionIsPolledAgainAsAnError(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	down := &accountsDown{Store: f.svc.Store}
	f.svc.Store = down
	f.up.set(upstream.StatusSucceeded, f.up.srv.URL+"/files/a.png", f.up.srv.URL+"/files/b.png")
	down.down.Store(true)
	sent := len(f.queue.msgs)
	if err := f.svc.Poll(context.Background(), generation.PollMessage{GenerationID: g.UUID}); err != nil {
		t.Fatalf("Poll = %v, want the failure handed to the next poll", err)
	}
	if len(f.queue.msgs) != sent+1 || f.queue.msgs[sent].Errors != 1 || f.queue.msgs[sent].Attempt != 1 {
		t.Fatalf("enqueued %+v, want the next poll counting one error", f.queue.msgs[sent:])
	}
	if got, _ := f.store.GetGeneration(context.Background(), g.UUID); got.Status != domain.StatusProcessing {
		t.Fatalf("generation %s after the failed poll, want processing", got.Status)
	}
	down.down.Store(false)
	if err := f.svc.Poll(context.Background(), f.queue.msgs[sent]); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.store.GetGeneration(context.Background(), g.UUID); got.Status != domain.StatusCompleted || len(got.OutputURLs) != 2 {
		t.Errorf("generation %s with %d outputs after the store came back, want completed with 2", got.Status, len(got.OutputURLs))
	}
}

// The provider's own progress figure (its logs' progress bar) is stored on
// each poll that finds the job running, and only when it grew: a figure
// shown never goes back.
func TestEachPollStoresTheProvidersProgressOnlyUpward(t *testing.T) {
	f := setup(t)
	g := f.create(t)
	for _, tt := range []struct {
		logs string
		want int
	}{
		{logs: "starting\n", want: 0},
		{logs: " 40%|████      | 4/10 [00:04<00:06]\n", want: 40},
		{logs: " 20%|██        | 2/10 [00:02<00:08]\n", want: 40},
		{logs: " 40%|████      | 4/10\n 70%|███████   | 7/10\n", want: 70},
	} {
		f.up.mu.Lock()
		f.up.logs = tt.logs
		f.up.mu.Unlock()
		if err := f.svc.Poll(context.Background(), f.queue.msgs[len(f.queue.msgs)-1]); err != nil {
			t.Fatal(err)
		}
		got, err := f.store.GetGeneration(context.Background(), g.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != domain.StatusProcessing || got.Progress != tt.want {
			t.Errorf("after a poll reading %q: %s at %d%%, want processing at %d%%", tt.logs, got.Status, got.Progress, tt.want)
		}
	}
}

// deadline_seconds: each poll comes no later than the caller's deadline,
// however far the backoff has grown, and the poll at the deadline cancels
// the job upstream and refunds the hold.
func TestPollsComeNoLaterThanTheCallersDeadline(t *testing.T) {
	f := setup(t)
	body := `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a cat"},"deadline_seconds":7}`
	g, err := f.creator().Create(context.Background(), f.user, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	deadline := f.now.Add(7 * time.Second)
	for i := 0; f.now.Before(deadline); i++ {
		if i > 20 {
			t.Fatalf("no poll reached the deadline: lags %v", f.queue.lag)
		}
		last := len(f.queue.msgs) - 1
		if lag := f.queue.lag[last]; f.now.Add(lag).After(deadline) {
			t.Fatalf("poll %d enqueued %v after %v, past the deadline %v (lags %v)", last, lag, *f.now, deadline, f.queue.lag)
		}
		*f.now = f.now.Add(f.queue.lag[last])
		if err := f.svc.Poll(context.Background(), f.queue.msgs[last]); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Max(f.queue.lag) < 3*time.Second {
		t.Errorf("lags %v never grew past the first: the deadline was not what cut them", f.queue.lag)
	}
	got, err := f.store.GetGeneration(context.Background(), g.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.StatusCanceled || got.Error != domain.DeadlineError {
		t.Errorf("at its deadline the generation is %s %q, want canceled %q", got.Status, got.Error, domain.DeadlineError)
	}
	if f.up.canceled.Load() != 1 {
		t.Errorf("%d upstream cancels, want 1", f.up.canceled.Load())
	}
	if a := f.account(t); !a.Held.IsZero() || !a.Balance.Equal(decimal.NewFromInt(100)) {
		t.Errorf("balance %s held %s after the deadline, want all back", a.Balance, a.Held)
	}
}
