package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/faults"
)

// streamWorld is a gate over the embedded store, wrapped by the faults
// store (so a test can make its calls fail), an account with a key, and a
// stream route on the fake clock clk whose record never finishes: the
// record is the path's id.
type streamWorld struct {
	clk    *clocktest.Fake
	faults *faults.Injector
	userID string
	key    string
	route  StreamHandler
}

func newStreamWorld(t *testing.T, maxOpen int, tokens TokenVerifier) *streamWorld {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(10), RateLimit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	w := &streamWorld{clk: clocktest.New(time.Now().UTC().Truncate(time.Second)), faults: faults.New(), userID: acct.UserID, key: acct.APIKey}
	fs := &faults.Store{Inner: st, In: w.faults}
	g := &Gate{Store: fs, Tokens: tokens, Log: quiet}
	w.route = g.stream(readAccess, Streams{Clock: w.clk, Leases: fs, MaxOpen: maxOpen},
		func(_ context.Context, req Request, _ string) (followed, error) {
			id := req.PathParameters["id"]
			return followed{lease: "generation/" + id, read: func(ctx context.Context) (snapshot, error) {
				// A read through the faults store, so that a test can
				// fail it: the record read is absent, the view fixed.
				if _, err := fs.GetLongVideo(ctx, "stream-world-record"); !errors.Is(err, domain.ErrNotFound) {
					return snapshot{}, err
				}
				return snapshot{view: map[string]string{"id": id, "status": "processing"}, id: 1, status: "processing"}, nil
			}}, nil
		})
	return w
}

// openedStream is a stream's body, read as a client reads it until it
// ends.
type openedStream struct {
	body  io.ReadCloser
	mu    sync.Mutex
	text  strings.Builder
	ended chan struct{}
	err   error // what ended the body: io.EOF for its clean end
}

// open asks for the stream of record id with credential; an answer that
// is not a stream is returned with its body.
func (w *streamWorld) open(t *testing.T, id, credential string) (*openedStream, int, string) {
	t.Helper()
	resp, err := w.route(context.Background(), Request{RouteKey: "GET /api/generations/{id}/events", Method: http.MethodGet,
		Headers: map[string]string{"authorization": "Bearer " + credential}, PathParameters: map[string]string{"id": id}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp.StatusCode, string(b)
	}
	s := &openedStream{body: resp.Body, ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			s.mu.Lock()
			s.text.WriteString(line)
			if err != nil {
				s.err = err
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s, resp.StatusCode, ""
}

func (s *openedStream) done() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

func (s *openedStream) read() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String(), s.err
}

// pump moves the clock a poll at a time, polls times, each time once
// every stream still open waits for the clock, and then waits for them to
// have done what the last poll brought (wait again, or end).
func (w *streamWorld) pump(t *testing.T, polls int, streams ...*openedStream) {
	t.Helper()
	for i := 0; i < polls; i++ {
		if !w.settle(t, streams) {
			return
		}
		w.clk.Advance(streamPoll)
	}
	w.settle(t, streams)
}

// settle waits until each stream still open waits for the clock; false
// when none is open.
func (w *streamWorld) settle(t *testing.T, streams []*openedStream) bool {
	t.Helper()
	limit := time.Now().Add(time.Minute) // for a broken test only
	for {
		open := 0
		for _, s := range streams {
			if !s.done() {
				open++
			}
		}
		if open == 0 {
			return false
		}
		if w.clk.WaitForTimers(open, 20*time.Millisecond) {
			return true
		}
		if time.Now().After(limit) {
			t.Fatal("the streams did not wait for the clock within a minute")
		}
	}
}

// waitEnded waits for a stream that ends now to end (its last Read).
func waitEnded(t *testing.T, s *openedStream) {
	t.Helper()
	select {
	case <-s.ended:
	case <-time.After(time.Minute):
		t.Fatal("the stream did not end within a minute")
	}
}

// recheckPolls is the polls from a stream's open to its first recheck.
var recheckPolls = int(streamKeyRecheck / streamPoll)

// In AWS a stream's function is not told its client went away: the
// client that resumes (the same record, with Last-Event-ID) takes the
// dropped stream's lease over, even with the account at its limit, and
// counts once; the dropped stream ends at its recheck, quietly (no error
// event, its body's clean end), leaving the lease to the resumed stream,
// whose own end gives it back.
func TestAStreamResumedOnItsRecordTakesTheDroppedOnesLease(t *testing.T) {
	w := newStreamWorld(t, 1, nil)
	dropped, status, body := w.open(t, "g1", w.key)
	if status != http.StatusOK {
		t.Fatalf("the first stream: HTTP %d %s", status, body)
	}
	// Its client went away, and nothing closes the body: Lambda does not
	// say so.
	resumed, status, body := w.open(t, "g1", w.key)
	if status != http.StatusOK {
		t.Fatalf("a stream resumed on the same record at the limit of 1: HTTP %d %s; want it to take the dropped one's lease", status, body)
	}
	if _, status, _ := w.open(t, "g2", w.key); status != http.StatusTooManyRequests {
		t.Fatalf("another record's stream: HTTP %d; want 429, the takeover counting once", status)
	}
	w.pump(t, recheckPolls-1, dropped, resumed)
	if dropped.done() {
		t.Fatal("the dropped stream ended before its recheck")
	}
	w.pump(t, 1, dropped, resumed)
	waitEnded(t, dropped)
	text, err := dropped.read()
	if !errors.Is(err, io.EOF) || strings.Contains(text, "event: error") {
		t.Errorf("the stream whose lease was taken over ended with %v and %q; want its clean end, no error event", err, text)
	}
	w.pump(t, 2, resumed)
	if resumed.done() {
		t.Fatal("the resumed stream ended with the dropped one")
	}
	if _, status, _ := w.open(t, "g2", w.key); status != http.StatusTooManyRequests {
		t.Errorf("after the dropped stream ended: another record's stream HTTP %d; want 429, the lease still the resumed stream's", status)
	}
	resumed.body.Close()
	waitEnded(t, resumed)
	if s, status, body := w.open(t, "g2", w.key); status != http.StatusOK {
		t.Errorf("after the resumed stream closed: HTTP %d %s; want its place back", status, body)
	} else {
		s.body.Close()
	}
}

// A store call that fails (the store not answering), on a recheck (the
// key's read or the lease's) or on a poll's read of the record, is retried
// at the next recheck or poll, the stream going on; three failures in a
// row end it, quietly (the client's resume meets the store's state in an
// ordinary answer), and its lease is given back.
func TestAStreamOutlivesTransientStoreFailures(t *testing.T) {
	for _, op := range []struct {
		name  string
		every int // the polls between two calls of it
	}{
		{"store.GetAPIKey", recheckPolls},
		{"store.HoldsStream", recheckPolls},
		{"store.GetLongVideo", 1}, // the world's record read
	} {
		for _, tt := range []struct {
			name   string
			failed []int // the calls that fail (1-based)
			ends   int   // the call that ends the stream (0: none)
		}{
			{"two in a row, twice", []int{1, 2, 4, 5}, 0},
			{"three in a row", []int{2, 3, 4}, 4},
		} {
			t.Run(op.name+" "+tt.name, func(t *testing.T) {
				w := newStreamWorld(t, 1, nil)
				s, status, body := w.open(t, "g1", w.key)
				if status != http.StatusOK {
					t.Fatalf("the stream: HTTP %d %s", status, body)
				}
				w.pump(t, 0, s) // its first read done: it waits for the clock
				w.faults.Phase("streaming")
				for _, n := range tt.failed {
					w.faults.Arm(faults.Point{Phase: "streaming", Op: op.name, Nth: n}, faults.FailBefore)
				}
				for call := 1; call <= 5; call++ {
					w.pump(t, op.every, s)
					if call == tt.ends {
						waitEnded(t, s)
						break
					}
					if s.done() {
						text, err := s.read()
						t.Fatalf("the stream ended at call %d (%v): %q", call, err, text)
					}
				}
				if fired := len(w.faults.Fired()); fired != len(tt.failed) {
					t.Fatalf("%d faults fired, want %d: the stream did not reach the store", fired, len(tt.failed))
				}
				if tt.ends == 0 {
					s.body.Close()
					return
				}
				text, err := s.read()
				if !errors.Is(err, io.EOF) || strings.Contains(text, "event: error") {
					t.Errorf("after three failed calls the stream ended with %v and %q; want its clean end, no error event", err, text)
				}
				if other, status, body := w.open(t, "g2", w.key); status != http.StatusOK {
					t.Errorf("after the stream ended: HTTP %d %s; want its lease given back", status, body)
				} else {
					other.body.Close()
				}
			})
		}
	}
}

// A token's expiry is checked on the stream's clock: a token that expires
// while it streams ends the stream at the next recheck with the 401
// envelope of an expired token, whatever the verifier's own clock says.
func TestAStreamEndsOnceItsTokenExpiresOnTheStreamsClock(t *testing.T) {
	w := newStreamWorld(t, 1, fakeTokens{})
	token := fakeToken(w.userID, w.clk.Now().Add(streamKeyRecheck+streamKeyRecheck/2))
	s, status, body := w.open(t, "g1", token)
	if status != http.StatusOK {
		t.Fatalf("the stream: HTTP %d %s", status, body)
	}
	w.pump(t, recheckPolls, s)
	if s.done() {
		t.Fatal("the stream ended at a recheck before its token expired")
	}
	w.pump(t, recheckPolls, s)
	waitEnded(t, s)
	text, _ := s.read()
	_, data, ok := strings.Cut(text, "event: error\ndata: ")
	if !ok {
		t.Fatalf("the stream whose token expired ended with %q; want an error event", text)
	}
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &env); err != nil || env.Error.Code != "unauthorized" || env.Error.Message != "invalid token" {
		t.Errorf("the error event's data %q (%v); want the 401 envelope of an invalid token", data, err)
	}
}
