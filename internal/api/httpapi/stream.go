package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediagen-dev/mediagen/internal/api/apiview"
	"github.com/mediagen-dev/mediagen/internal/core/clock"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// The progress streams: GET /api/generations/{id}/events and
// GET /api/long-story/videos/{videoId}/events answer text/event-stream, an
// event per change of the status view (the view as GET status answers it),
// until a view whose status is terminal. An HTTP API cannot stream (it
// buffers a Lambda's answer whole), so in AWS a function URL with
// InvokeMode RESPONSE_STREAM serves them; locally the runtime does.

// StreamResponse is an answer whose body is written as it is made: the
// head first, then Body, read until it ends. Body is nil for an answer
// without one; the caller closes it.
type StreamResponse struct {
	StatusCode int
	Headers    map[string]string
	Body       io.ReadCloser
}

// StreamHandler is a streaming route.
type StreamHandler = func(ctx context.Context, req Request) (StreamResponse, error)

// eventStreamContentType is the streams' media type.
const eventStreamContentType = "text/event-stream"

// lastEventIDHeader resumes a stream: the events up to that id are not
// sent again.
const lastEventIDHeader = "Last-Event-ID"

// Stream timing. The stream reads the record every streamPoll, and
// writes a comment line after streamHeartbeat without an event, so that
// proxies and clients see the connection alive.
const (
	streamPoll      = time.Second
	streamHeartbeat = 15 * time.Second
	// streamMaxDuration ends a stream still open (the client resumes with
	// Last-Event-ID): under the stream function's timeout in AWS.
	streamMaxDuration = 10 * time.Minute
	// streamDeadlineMargin is kept before the invocation's own deadline.
	streamDeadlineMargin = 5 * time.Second
	// streamKeyRecheck is how often an open stream checks its credential
	// and its lease again (on the stream's clock): a key revoked, an
	// account deleted or a token expired meanwhile ends the stream with an
	// error event; a lease taken over by a stream resumed on the same
	// record ends it quietly.
	streamKeyRecheck = 30 * time.Second
	// streamStoreFailures is how many store calls in a row a stream's
	// rechecks, or its record's reads, may fail (the store not answering)
	// before the stream ends: one failure is retried at the next recheck
	// or poll, the stream going on meanwhile.
	streamStoreFailures = 3
	// streamMaxOpen is how many streams an account may have open at once
	// (across every instance of the stream function): each holds an
	// instance of the function for up to streamMaxDuration, so a key
	// opening streams without bound would take the function's reserved
	// concurrency from every other account.
	streamMaxOpen = 5
	// streamLeaseMargin is how long past its end a stream's lease lasts:
	// a stream ends by then even when its process died without closing
	// it (or, in AWS, its client went away unnoticed and nobody resumed
	// it), and its place comes back.
	streamLeaseMargin = time.Minute
	// streamRetryAfter is the Retry-After of a stream refused for the
	// account's open streams: one of them may end at any moment (its
	// record finished, its client went away and it noticed, or a stream
	// abandoned on a record was resumed and so taken over).
	streamRetryAfter = 10 * time.Second
	// streamCloseTimeout bounds the giving back of a stream's lease, made
	// after the stream's own context ended.
	streamCloseTimeout = 5 * time.Second
)

// StreamLeases counts the streams an account has open, across instances
// (store.Streams): a lease per record followed, which a stream resumed on
// the same record takes over.
type StreamLeases interface {
	OpenStream(ctx context.Context, userID, stream, owner string, limit int, at, expires time.Time) (bool, error)
	HoldsStream(ctx context.Context, userID, stream, owner string) (bool, error)
	CloseStream(ctx context.Context, userID, stream, owner string) error
}

// Streams are the settings of the streaming routes: their clock (the
// poll and heartbeat timers; tests move a fake one) and how long a stream
// may stay open.
type Streams struct {
	Clock clock.Clock
	// MaxDuration bounds a stream (default streamMaxDuration).
	MaxDuration time.Duration
	// Leases counts each account's open streams, which MaxOpen caps
	// (default streamMaxOpen).
	Leases  StreamLeases
	MaxOpen int
}

// tooManyStreams is the refusal of a stream past the account's open ones.
func tooManyStreams(limit int) *Error {
	retry := int(streamRetryAfter / time.Second)
	return &Error{Status: http.StatusTooManyRequests, Code: "too_many_streams",
		Message: fmt.Sprintf("an account may follow at most %d records by event stream at once; close one, or retry after %d s", limit, retry),
		Headers: map[string]string{"Retry-After": strconv.Itoa(retry)}}
}

// newLeaseOwner names one stream, the owner of its lease.
func newLeaseOwner() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// followed is the record a stream follows: its lease (the record's kind
// and id: one lease per record and account, so that a client resuming a
// stream its Lambda instance never learned was dropped takes the dropped
// one's place instead of a new one) and its reader.
type followed struct {
	lease string
	read  func(context.Context) (snapshot, error)
}

// snapshot is one read of the record: its view, the view's event id, and
// whether the view is final.
type snapshot struct {
	view     any
	id       int64
	status   string
	terminal bool
}

// eventID is a status view's event id: increasing with each change of
// the view, so Last-Event-ID says how far a client got. It is the
// record's last write (milliseconds) and then the view's own changes
// between writes: progress (an estimate that grows with time) and the
// place in line (which only falls), as one integer.
func eventID(updatedAt time.Time, progress, queuePosition int) int64 {
	line := 999
	if queuePosition > 0 {
		line = 999 - min(queuePosition, 999)
	}
	return updatedAt.UnixMilli()*1_000_000 + int64(min(max(progress, 0), 999))*1000 + int64(line)
}

// GenerationEventsRoute is GET /api/generations/{id}/events.
func GenerationEventsRoute(r *generation.Reader, gate *Gate, s Streams) StreamHandler {
	return gate.stream(readAccess, s, func(ctx context.Context, req Request, userID string) (followed, error) {
		g, err := r.Lookup(ctx, userID, req.PathParameters["id"])
		if err != nil {
			return followed{}, err
		}
		uuid := g.UUID
		return followed{lease: "generation/" + uuid, read: func(ctx context.Context) (snapshot, error) {
			g, err := r.Lookup(ctx, userID, uuid)
			if err != nil {
				return snapshot{}, err
			}
			view := apiview.GenerationStatusAt(g, gate.now())
			if view.QueuePosition, err = r.QueuePosition(ctx, g); err != nil {
				return snapshot{}, err
			}
			return snapshot{view: view, id: eventID(g.UpdatedAt, view.Progress, view.QueuePosition),
				status: view.Status, terminal: g.Status.Terminal()}, nil
		}}, nil
	})
}

// LongVideoEventsRoute is GET /api/long-story/videos/{videoId}/events.
func LongVideoEventsRoute(r *longform.Reader, gate *Gate, s Streams) StreamHandler {
	return gate.stream(readAccess, s, func(ctx context.Context, req Request, userID string) (followed, error) {
		v, err := r.Lookup(ctx, userID, req.PathParameters["videoId"])
		if err != nil {
			return followed{}, err
		}
		id := v.ID
		return followed{lease: "long_video/" + id, read: func(ctx context.Context) (snapshot, error) {
			v, err := r.Lookup(ctx, userID, id)
			if err != nil {
				return snapshot{}, err
			}
			view := longVideoStatusAt(v, gate.now())
			// A completed video with a scene regenerate running is followed
			// to the regenerate's end, its new revision or the old one.
			return snapshot{view: view, id: eventID(v.UpdatedAt, view.Progress, 0), status: view.Status,
				terminal: v.Status.Terminal() && v.Regenerating == nil}, nil
		}}, nil
	})
}

// stream wraps a streaming route with the gate (authentication, the rate
// limit, the scope, the error envelope: a refusal is an ordinary JSON
// answer) and answers the events of the snapshots of the record open
// finds, while the account has fewer than s.MaxOpen records followed (a
// lease of s.Leases each, taken over by a stream resumed on the record,
// given back when the stream holding it ends).
func (g *Gate) stream(access Access, s Streams, open func(ctx context.Context, req Request, userID string) (followed, error)) StreamHandler {
	return func(ctx context.Context, req Request) (StreamResponse, error) {
		ctx, a, cred, limits, err := g.admit(ctx, req, access, true)
		caller := cred.caller
		if cred.key.Hash != "" {
			// No authorizer runs in front of the stream function (its URL
			// has none): the key's use is noted here once the key
			// authenticated, as the authorizer notes it, so that a key used
			// only for streams does not read as unused. Only this
			// function's code reaches the write (its role alone of the
			// route functions' may update the keys table).
			g.noteUse(ctx, cred.key)
		}
		var f followed
		var last int64
		if err == nil {
			last, err = lastEventID(header(req, lastEventIDHeader))
		}
		if err == nil {
			f, err = open(ctx, req, a.UserID)
		}
		clk := clock.Or(s.Clock)
		until := clk.Now().Add(orDefault(s.MaxDuration, streamMaxDuration))
		if d, ok := ctx.Deadline(); ok {
			// The invocation's own deadline, on the wall clock: the stream
			// ends in time to end its answer.
			if left := time.Until(d) - streamDeadlineMargin; clk.Now().Add(left).Before(until) {
				until = clk.Now().Add(left)
			}
		}
		owner := newLeaseOwner()
		if err == nil {
			limit := s.MaxOpen
			if limit <= 0 {
				limit = streamMaxOpen
			}
			var opened bool
			if opened, err = s.Leases.OpenStream(ctx, a.UserID, f.lease, owner, limit, clk.Now(), until.Add(streamLeaseMargin)); err == nil && !opened {
				err = tooManyStreams(limit)
			}
		}
		if err != nil {
			resp := errorResponse(ctx, g.requestLog(req, a.UserID, caller.KeyPrefix), req, err)
			for k, v := range limits {
				resp.Headers[k] = v
			}
			return StreamResponse{StatusCode: resp.StatusCode, Headers: resp.Headers, Body: io.NopCloser(strings.NewReader(resp.Body))}, nil
		}
		authorization := header(req, "Authorization")
		recheck := func(ctx context.Context, now time.Time) error {
			_, cred, err := g.authenticate(ctx, authorization, access.Tokens, false)
			if err == nil && !cred.until.IsZero() && !cred.until.After(now) {
				// Expired on the stream's clock, whatever the verifier's
				// own clock says (the local runtime's has none of its own:
				// the wall clock), as a cached gateway answer is refused
				// once the token's time is up.
				g.logRefused(ctx, "token expired while streaming", "token")
				return unauthorized("invalid token")
			}
			return err
		}
		holds := func(ctx context.Context) (bool, error) {
			return s.Leases.HoldsStream(ctx, a.UserID, f.lease, owner)
		}
		refusal := func(ctx context.Context, err error) string {
			return errorResponse(ctx, g.requestLog(req, a.UserID, caller.KeyPrefix), req, err).Body
		}
		headers := map[string]string{"Content-Type": eventStreamContentType, "Cache-Control": "no-store",
			"X-Content-Type-Options": "nosniff", "X-Accel-Buffering": "no"}
		for k, v := range limits {
			headers[k] = v
		}
		log := g.requestLog(req, a.UserID, caller.KeyPrefix)
		closeLease := func(ctx context.Context) {
			// After the stream's own context ended (a client gone cancels
			// it): the lease is given back all the same, or lapses.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), streamCloseTimeout)
			defer cancel()
			if err := s.Leases.CloseStream(ctx, a.UserID, f.lease, owner); err != nil {
				log.WarnContext(ctx, "event stream: giving back its lease failed; it lapses at the stream's end", "error", err)
			}
		}
		es := &eventStream{closeLease: closeLease, ctx: ctx, read: f.read, recheck: recheck, holds: holds, refusal: refusal, clock: clk, checked: clk.Now(),
			last: last, until: until, log: log}
		es.ctx, es.cancel = context.WithCancel(ctx)
		return StreamResponse{StatusCode: http.StatusOK, Headers: headers, Body: es}, nil
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// lastEventID reads Last-Event-ID: absent is 0 (nothing seen).
func lastEventID(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, &Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Message: "Last-Event-ID takes the id of an event this stream sent (a whole number)"}
	}
	return n, nil
}

// eventStream is a stream's body: each Read waits for the next event (or
// heartbeat) and hands it out, so that the body is made as it is read and
// no goroutine outlives it.
type eventStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	read   func(context.Context) (snapshot, error)
	// recheck authenticates the stream's credential again at the
	// stream's now; refusal is the error envelope of its refusal.
	recheck func(context.Context, time.Time) error
	refusal func(context.Context, error) string
	// holds says whether the stream still holds its lease (no stream
	// resumed on its record since).
	holds func(context.Context) (bool, error)
	// closeLease gives the stream's place among its account's back, once
	// (ended).
	closeLease func(context.Context)
	ended      sync.Once
	clock      clock.Clock
	until      time.Time
	log        interface {
		InfoContext(ctx context.Context, msg string, args ...any)
		WarnContext(ctx context.Context, msg string, args ...any)
		ErrorContext(ctx context.Context, msg string, args ...any)
	}

	mu        sync.Mutex
	buf       []byte
	last      int64 // the last event id sent (or the client's Last-Event-ID)
	started   bool
	lastWrite time.Time
	checked   time.Time // when the credential was last checked
	failures  int       // the rechecks failed in a row
	misreads  int       // the record's reads failed in a row
	done      bool
}

// Read hands out the stream: the current view first (when newer than
// Last-Event-ID), then an event per change, every streamPoll; a comment
// when streamHeartbeat passed without one; the end after a terminal
// view, or at the stream's time limit.
func (s *eventStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.buf) == 0 {
		if s.done {
			s.end()
			return 0, io.EOF
		}
		if err := s.next(); err != nil {
			s.done = true
			s.end()
			return 0, err
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// next fills buf with what comes next, waiting a poll interval first
// except for the stream's first read.
func (s *eventStream) next() error {
	if s.started {
		if !clock.Sleep(s.ctx, s.clock, streamPoll) {
			return s.ctx.Err()
		}
	} else {
		s.started = true
		s.lastWrite = s.clock.Now()
		// The reconnection delay a client should wait before resuming.
		s.buf = append(s.buf, fmt.Sprintf("retry: %d\n\n", streamPoll.Milliseconds())...)
	}
	if now := s.clock.Now(); now.Sub(s.checked) >= streamKeyRecheck {
		s.checked = now
		if s.recheckEnds(now) {
			s.done = true
			return nil
		}
	}
	snap, err := s.read(s.ctx)
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			// Gone since the stream opened (deleted with its account): end.
			s.done = true
			return nil
		}
		if s.ctx.Err() != nil {
			return fmt.Errorf("event stream: %w", err) // closed meanwhile
		}
		// As a failed recheck: retried at the next poll, and after
		// streamStoreFailures in a row the stream ends without a last
		// event (the client's resume meets the store in an ordinary
		// answer). A heartbeat due meanwhile is still sent.
		s.misreads++
		if s.misreads >= streamStoreFailures {
			s.log.ErrorContext(s.ctx, "event stream: reading the record failed too often in a row; the stream ends",
				"error", err, "failures", s.misreads)
			s.done = true
			return nil
		}
		s.log.WarnContext(s.ctx, "event stream: reading the record failed; retried at the next poll",
			"error", err, "failures", s.misreads)
		now := s.clock.Now()
		s.heartbeat(now)
		s.done = !now.Before(s.until)
		return nil
	}
	s.misreads = 0
	now := s.clock.Now()
	switch {
	case snap.id > s.last:
		data, err := json.Marshal(snap.view)
		if err != nil {
			return fmt.Errorf("event stream: %w", err)
		}
		s.buf = append(s.buf, fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", snap.id, snap.status, data)...)
		s.last, s.lastWrite = snap.id, now
	default:
		s.heartbeat(now)
	}
	if snap.terminal || !now.Before(s.until) {
		s.done = true
	}
	return nil
}

// heartbeat adds a comment to buf when streamHeartbeat passed without a
// write, so that proxies and clients keep an idle stream open.
func (s *eventStream) heartbeat(now time.Time) {
	if now.Sub(s.lastWrite) >= streamHeartbeat {
		s.buf = append(s.buf, ": keep-alive\n\n"...)
		s.lastWrite = now
	}
}

// recheckEnds checks the stream's credential and its lease again, and
// says whether the stream ends here (buf then holds its last event, if
// any).
//
// A refused credential (revoked, its account gone, a token expired on the
// stream's clock) ends it with an error event carrying the envelope the
// API answers such a credential.
//
// A lease taken over (the client, or another, resumed a stream on this
// record) ends it without a last event: the stream is most likely one its
// client dropped and no one reads (in AWS the function is not told), and
// if someone still reads it, an end without a final view is what a
// client resumes with Last-Event-ID (as at the time limit), losing
// nothing, where an error event would read as a refusal of its
// credential (client.FollowGeneration returns it; the playground stops
// following).
//
// A check that fails (the store not answering) is logged and retried at
// the next recheck, the stream going on meanwhile; after
// streamStoreFailures in a row the stream ends, again without a last
// event: the client's resume opens it afresh, and a store still failing
// answers that open with the API's own 5xx JSON, which clients retry as
// any 5xx, rather than an event they would take for a refusal.
func (s *eventStream) recheckEnds(now time.Time) bool {
	err := s.recheck(s.ctx, now)
	var refused *Error
	if errors.As(err, &refused) {
		s.buf = append(s.buf, fmt.Sprintf("event: error\ndata: %s\n\n", s.refusal(s.ctx, err))...)
		return true
	}
	held := true
	if err == nil {
		held, err = s.holds(s.ctx)
	}
	if err != nil {
		s.failures++
		if s.failures >= streamStoreFailures {
			s.log.ErrorContext(s.ctx, "event stream: rechecking its credential and lease failed too often in a row; the stream ends",
				"error", err, "failures", s.failures)
			return true
		}
		s.log.WarnContext(s.ctx, "event stream: rechecking its credential and lease failed; retried at the next recheck",
			"error", err, "failures", s.failures)
		return false
	}
	s.failures = 0
	if !held {
		s.log.InfoContext(s.ctx, "event stream: a stream resumed on its record took its lease over; the stream ends")
		return true
	}
	return false
}

// Close ends the stream: a Read waiting for the next poll returns, and
// the stream's lease is given back.
func (s *eventStream) Close() error {
	s.cancel()
	s.end()
	return nil
}

// end gives the stream's lease back, once.
func (s *eventStream) end() {
	s.ended.Do(func() { s.closeLease(s.ctx) })
}
