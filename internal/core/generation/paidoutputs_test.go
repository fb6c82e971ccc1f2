package generation_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// gatedBucket stops the output copy at one step: before the put numbered
// at (0-based), or after the last of four when at is 4. It stops once;
// the test then acts and lets it go on.
type gatedBucket struct {
	media.Bucket
	at      int
	mu      sync.Mutex
	puts    int
	fired   bool
	reached chan struct{}
	resume  chan struct{}
}

func newGatedBucket(inner media.Bucket, at int) *gatedBucket {
	return &gatedBucket{Bucket: inner, at: at, reached: make(chan struct{}), resume: make(chan struct{})}
}

func (b *gatedBucket) gate(step int) {
	b.mu.Lock()
	stop := !b.fired && step == b.at
	if stop {
		b.fired = true
	}
	b.mu.Unlock()
	if stop {
		close(b.reached)
		<-b.resume
	}
}

func (b *gatedBucket) Put(ctx context.Context, key string, body io.Reader, contentType string) error {
	b.mu.Lock()
	n := b.puts
	b.puts++
	b.mu.Unlock()
	b.gate(n)
	err := b.Bucket.Put(ctx, key, body, contentType)
	if n == 3 {
		b.gate(4)
	}
	return err
}

// gatedStore stops the poller just before its finishing claim, once.
type gatedStore struct {
	generation.Store
	once    sync.Once
	reached chan struct{}
	resume  chan struct{}
}

func (s *gatedStore) ClaimGenerationFinish(ctx context.Context, uuid string, at time.Time) error {
	s.once.Do(func() { close(s.reached); <-s.resume })
	return s.Store.ClaimGenerationFinish(ctx, uuid, at)
}

// paidWorld is a poller, the cancel and delete-output routes and a
// four-image generation, on one store.
type paidWorld struct {
	st      store.Store
	objects *objectstore.Store
	bucket  *s3bucket.Bucket
	up      *fakeUpstream
	host    string
	now     time.Time
	mu      sync.Mutex
}

func (w *paidWorld) clock() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.now }

func (w *paidWorld) advance(d time.Duration) { w.mu.Lock(); w.now = w.now.Add(d); w.mu.Unlock() }

func (w *paidWorld) poller(t *testing.T, st generation.Store, bucket media.Bucket) *generation.Service {
	router, err := upstream.NewRouter(routing.Single("fake", routing.ProtocolReplicate, w.up.srv.URL, []string{w.host}),
		func(*routing.Upstream) (string, error) { return "t", nil }, nil, upstream.Tuning{Attempts: 2, BaseBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &generation.Service{
		Store: st, Upstreams: router, Queue: &sentQueue{},
		Copier:  &media.Copier{Bucket: bucket, HTTP: http.DefaultClient, AllowedHosts: []string{w.host}, MaxBytes: 1 << 20, AllowLoopback: true},
		Outputs: w.bucket, Prices: pricing.Default(),
		Settings: generation.Settings{Now: w.clock, Log: quiet()},
	}
}

// outputKeys are the keys a four-image png generation's outputs take.
func outputKeys(uuid string) []string {
	keys := make([]string, 4)
	for i := range keys {
		keys[i] = media.OutputKeyBase(uuid, i) + ".png"
	}
	return keys
}

// served counts the generation's outputs the read-only origin serves,
// and the objects under its prefix.
func (w *paidWorld) served(t *testing.T, uuid string) (urls200, objects int) {
	t.Helper()
	for _, k := range outputKeys(uuid) {
		resp, err := http.Get(w.bucket.URL(k))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			urls200++
		} else if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 200 or 404", k, resp.StatusCode)
		}
	}
	keys, err := w.bucket.Keys(context.Background(), media.GenerationPrefix(uuid))
	if err != nil {
		t.Fatal(err)
	}
	return urls200, len(keys)
}

// TestCancelDeleteAndCompletionRaceTheOutputCopy races a cancel, a
// delete of the outputs, or nothing, with the copy of a four-image
// generation's outputs, at every step of the copy (before the finishing
// claim, before each output, after the last), on both stores. Whatever
// wins: canceled or removed means no output is served or left in the
// bucket and (canceled) every credit came back; completed means charged.
func TestCancelDeleteAndCompletionRaceTheOutputCopy(t *testing.T) {
	for _, sc := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store {
			st, err := sqlitestore.Open(context.Background(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"dynamodb", func(t *testing.T) store.Store {
			ctx := context.Background()
			server, err := testsupport.StartDynamoDB(ctx)
			if err != nil {
				t.Fatalf("moto's server: %v", err)
			}
			t.Cleanup(server.Stop)
			st, err := server.NewStore(ctx, "paid")
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			w := newPaidWorld(t, sc.open(t))
			for _, action := range []string{"cancel", "delete", "none"} {
				for step := -1; step <= 4; step++ {
					name := fmt.Sprintf("%s/after-%d-outputs", action, step)
					if step < 0 {
						name = action + "/before-the-claim"
					}
					t.Run(name, func(t *testing.T) { w.race(t, action, step) })
				}
			}
			t.Run("late-copy-after-a-takeover-and-a-delete", w.lateCopy)
			t.Run("failed-while-finishing", w.failedWhileFinishing)
		})
	}
}

func newPaidWorld(t *testing.T, st store.Store) *paidWorld {
	ctx := context.Background()
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	up := newFakeUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	return &paidWorld{st: st, objects: objects, bucket: objects.MediaBucket(), up: up, host: u.Host,
		now: time.Now().UTC().Truncate(time.Millisecond)}
}

const fourImages = `{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a cat"},"image_count":4}`

// start makes an account and its four-image generation, and has the
// provider finish it.
func (w *paidWorld) start(t *testing.T, svc *generation.Service) (user string, g domain.Generation) {
	t.Helper()
	ctx := context.Background()
	acct, err := (&accounts.Service{Store: w.st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(100)})
	if err != nil {
		t.Fatal(err)
	}
	g, err = generation.NewCreator(svc.Store, svc.Upstreams, svc.Queue, nil, svc.Inputs, svc.Prices, svc.Settings).Create(ctx, acct.UserID, []byte(fourImages))
	if err != nil {
		t.Fatal(err)
	}
	files := make([]string, 4)
	for i := range files {
		files[i] = fmt.Sprintf("%s/files/%d.png", w.up.srv.URL, i)
	}
	w.up.set(upstream.StatusSucceeded, files...)
	return acct.UserID, g
}

func (w *paidWorld) race(t *testing.T, action string, step int) {
	ctx := context.Background()
	bucket := newGatedBucket(w.bucket, step) // step -1: it never stops
	var st generation.Store = w.st
	reached, resume := bucket.reached, bucket.resume
	if step < 0 {
		gs := &gatedStore{Store: w.st, reached: make(chan struct{}), resume: make(chan struct{})}
		st, reached, resume = gs, gs.reached, gs.resume
	}
	svc := w.poller(t, st, bucket)
	user, g := w.start(t, svc)
	polled := make(chan error, 1)
	go func() { polled <- svc.Poll(ctx, generation.PollMessage{GenerationID: g.UUID}) }()
	select {
	case <-reached:
	case err := <-polled:
		t.Fatalf("the poll ended (%v) before the copy's step %d", err, step)
	}
	var actErr error
	switch action {
	case "cancel":
		_, actErr = generation.NewCanceler(w.st, svc.Upstreams, nil, nil, svc.Settings).Cancel(ctx, user, g.UUID)
	case "delete":
		_, actErr = generation.NewOutputRemover(w.st, w.bucket, nil, svc.Settings).RemoveOutput(ctx, user, g.UUID)
	}
	close(resume)
	if err := <-polled; err != nil {
		t.Fatalf("Poll: %v", err)
	}
	got, err := w.st.GetGeneration(ctx, g.UUID)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case action == "cancel" && step < 0:
		if actErr != nil || got.Status != domain.StatusCanceled {
			t.Errorf("a cancel before the claim = %v, ended %s; want it to win", actErr, got.Status)
		}
	case action == "cancel":
		if !errors.Is(actErr, domain.ErrFinishing) || got.Status != domain.StatusCompleted {
			t.Errorf("a cancel during the copy = %v, ended %s; want ErrFinishing and completed", actErr, got.Status)
		}
	case action == "delete":
		if !errors.Is(actErr, domain.ErrConflict) || got.Status != domain.StatusCompleted || got.Files.Removal != domain.RemovalNone {
			t.Errorf("a delete during the copy = %v, ended %s removal %q; want a conflict, completed and kept", actErr, got.Status, got.Files.Removal)
		}
		// Deleted once completed: nothing is served or left.
		if _, err := generation.NewOutputRemover(w.st, w.bucket, nil, svc.Settings).RemoveOutput(ctx, user, g.UUID); err != nil {
			t.Fatal(err)
		}
		if got, err = w.st.GetGeneration(ctx, g.UUID); err != nil {
			t.Fatal(err)
		}
	default:
		if got.Status != domain.StatusCompleted {
			t.Errorf("ended %s, want completed", got.Status)
		}
	}
	w.checkInvariant(t, user, got)
}

// checkInvariant: canceled or removed ⇒ no output served, no object
// under the prefix; canceled ⇒ all credits back; completed ⇒ charged
// its price, and (unless removed) all four outputs served.
func (w *paidWorld) checkInvariant(t *testing.T, user string, g domain.Generation) {
	t.Helper()
	a, err := w.st.GetAccount(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	served, objects := w.served(t, g.UUID)
	removed := g.Files.Removal != domain.RemovalNone
	switch {
	case g.Status == domain.StatusCanceled || removed:
		if served != 0 || objects != 0 {
			t.Errorf("%s (removal %q): %d outputs served, %d objects under the prefix; want none", g.Status, g.Files.Removal, served, objects)
		}
	case g.Status == domain.StatusCompleted:
		if served != 4 || objects != 4 {
			t.Errorf("completed: %d outputs served, %d objects; want 4", served, objects)
		}
	}
	switch g.Status {
	case domain.StatusCanceled:
		if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Captured.IsZero() || !a.Held.IsZero() {
			t.Errorf("canceled: balance %s captured %s held %s; want every credit back", a.Balance, a.Captured, a.Held)
		}
	case domain.StatusCompleted:
		if !a.Captured.Equal(g.CreditsUsed) || !a.Held.IsZero() || !a.Balance.Equal(decimal.NewFromInt(100).Sub(g.CreditsUsed)) {
			t.Errorf("completed: balance %s captured %s held %s; want %s charged", a.Balance, a.Captured, a.Held, g.CreditsUsed)
		}
	default:
		t.Errorf("ended %s", g.Status)
	}
}

// lateCopy: a poll stops after two outputs and its lease runs out; the
// redelivered poll takes the finishing claim over and completes the
// generation, whose outputs the caller then deletes. When the first poll
// goes on, it writes the last two outputs after the delete listed the
// prefix: it sees the removal and deletes what it wrote.
func (w *paidWorld) lateCopy(t *testing.T) {
	ctx := context.Background()
	slow := newGatedBucket(w.bucket, 2)
	first := w.poller(t, w.st, slow)
	user, g := w.start(t, first)
	polled := make(chan error, 1)
	go func() { polled <- first.Poll(ctx, generation.PollMessage{GenerationID: g.UUID}) }()
	<-slow.reached
	w.advance(generation.DefaultPollLease + time.Second)
	second := w.poller(t, w.st, w.bucket)
	if err := second.Poll(ctx, generation.PollMessage{GenerationID: g.UUID}); err != nil {
		t.Fatalf("the redelivered poll: %v", err)
	}
	cdn := &recordingCDN{}
	if _, err := generation.NewOutputRemover(w.st, w.bucket, cdn, second.Settings).RemoveOutput(ctx, user, g.UUID); err != nil {
		t.Fatal(err)
	}
	// The delete drops exactly the generation's paths from the CDN.
	if want := [][]string{{"/generations/" + g.UUID + "/*"}}; !reflect.DeepEqual(cdn.calls, want) {
		t.Errorf("CDN invalidations %v, want %v", cdn.calls, want)
	}
	close(slow.resume)
	if err := <-polled; err != nil {
		t.Fatalf("the late poll: %v", err)
	}
	got, err := w.st.GetGeneration(ctx, g.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.StatusCompleted || got.Files.Removal != domain.RemovalRemoved {
		t.Fatalf("ended %s removal %q, want completed and removed", got.Status, got.Files.Removal)
	}
	w.checkInvariant(t, user, got)
}

// failedWhileFinishing: the last output is refused after three were
// copied; the generation fails, its credits come back, and the three
// copied outputs are deleted before they do.
func (w *paidWorld) failedWhileFinishing(t *testing.T) {
	ctx := context.Background()
	svc := w.poller(t, w.st, w.bucket)
	user, g := w.start(t, svc)
	w.up.set(upstream.StatusSucceeded, w.up.srv.URL+"/files/0.png", w.up.srv.URL+"/files/1.png", w.up.srv.URL+"/files/2.png",
		"https://elsewhere.example/3.png")
	if err := svc.Poll(ctx, generation.PollMessage{GenerationID: g.UUID}); err != nil {
		t.Fatal(err)
	}
	got, err := w.st.GetGeneration(ctx, g.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.StatusFailed {
		t.Fatalf("ended %s, want failed", got.Status)
	}
	a, err := w.st.GetAccount(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Held.IsZero() {
		t.Errorf("failed: balance %s held %s; want every credit back", a.Balance, a.Held)
	}
	if served, objects := w.served(t, g.UUID); served != 0 || objects != 0 {
		t.Errorf("failed: %d outputs served, %d objects left; want none", served, objects)
	}
}

// recordingCDN is the CDN's invalidations (media.Invalidator).
type recordingCDN struct {
	mu    sync.Mutex
	calls [][]string
}

func (c *recordingCDN) Invalidate(_ context.Context, paths []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, paths)
	return nil
}
