// Package lambdaruntime emulates the AWS Lambda Runtime API (version
// 2018-06-01) of one execution environment on loopback, so that a
// function's bootstrap binary can be started as Lambda starts it and timed:
// the process gets AWS_LAMBDA_RUNTIME_API pointing here, asks
// GET /2018-06-01/runtime/invocation/next for an event, and answers it with
// POST .../invocation/{id}/response or .../invocation/{id}/error (or reports
// a failed init with POST /2018-06-01/runtime/init/error). The server
// records when each of these happened. Local only: no Lambda imports it.
//
// What it emulates of Lambda: the documented paths, status codes (200 for
// an event, 202 for an answer, 400 for an unknown or already answered
// request id, 413 for a response over 6 MB) and the event headers
// Lambda-Runtime-Aws-Request-Id, Lambda-Runtime-Deadline-Ms,
// Lambda-Runtime-Invoked-Function-Arn and Lambda-Runtime-Trace-Id. One
// event at a time is handed out, as Lambda does outside Managed Instances.
// Not emulated: the Extensions and Telemetry APIs, response streaming,
// freezing the process between events, and the client-context and Cognito
// headers (mobile SDK calls only).
package lambdaruntime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The Runtime API's paths and headers.
const (
	apiVersion = "2018-06-01"

	pathNext      = "/" + apiVersion + "/runtime/invocation/next"
	pathInitError = "/" + apiVersion + "/runtime/init/error"

	headerRequestID          = "Lambda-Runtime-Aws-Request-Id"
	headerDeadlineMs         = "Lambda-Runtime-Deadline-Ms"
	headerInvokedFunctionArn = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID            = "Lambda-Runtime-Trace-Id"
	headerFunctionErrorType  = "Lambda-Runtime-Function-Error-Type"
)

// MaxResponseBytes is Lambda's limit on a synchronous invocation's
// response payload.
const maxResponseBytes = 6 << 20

// streamingContentType is the Content-Type of a streamed answer to a
// function URL in RESPONSE_STREAM mode (aws-lambda-go's
// events.LambdaFunctionURLStreamingResponse): its head as JSON, eight NUL
// bytes, then the body, posted to /response as it is made (chunked). Such
// an answer is not held to MaxResponseBytes (a stream may send 200 MB).
const streamingContentType = "application/vnd.awslambda.http-integration-response"

// Options describe the function the server hands events to.
type options struct {
	// FunctionName is the function's name (default "function").
	FunctionName string
	// Region and AccountID make up the invoked function's ARN (defaults
	// us-east-1 and 123456789012).
	Region, AccountID string
	// Timeout sets each event's deadline from when it is handed out
	// (default 3 s, Lambda's default).
	Timeout time.Duration
}

// FunctionError is what a runtime reports on /error or /init/error: the
// JSON body Lambda documents, and the Lambda-Runtime-Function-Error-Type
// header (or trailer) when it sent one.
type FunctionError struct {
	Message    string `json:"errorMessage"`
	Type       string `json:"errorType"`
	StackTrace any    `json:"stackTrace,omitempty"`
	// HeaderType is the Lambda-Runtime-Function-Error-Type the runtime sent.
	HeaderType string `json:"-"`
	// Raw is the body as sent, when it was not that JSON.
	Raw []byte `json:"-"`
}

func (e *FunctionError) Error() string {
	t := e.Type
	if t == "" {
		t = e.HeaderType
	}
	if e.Message == "" && len(e.Raw) > 0 {
		return fmt.Sprintf("%s: %s", t, e.Raw)
	}
	return fmt.Sprintf("%s: %s", t, e.Message)
}

// Invocation is one event and what became of it. Its fields are set by
// the server; read them after Wait returns.
type Invocation struct {
	RequestID string
	Payload   []byte
	TraceID   string
	// Deadline is the one handed out with the event.
	Deadline time.Time
	// Queued, Delivered (the /next answer) and Answered (the /response or
	// /error request) times.
	Queued, Delivered, Answered time.Time
	// Response is the payload the runtime posted to /response, or nil.
	Response []byte
	// ContentType is the response's Content-Type.
	ContentType string
	// Err is the error the runtime posted to /error, or nil.
	Err *FunctionError
	// Stream is a streamed answer (streamingContentType) as it arrives,
	// set instead of Response: the invocation counts as answered when its
	// head starts, and the reader ends with the runtime's request (with
	// the function's error when its trailers name one). The reader of
	// Stream must read it to its end or close it.
	Stream io.ReadCloser

	done chan struct{}
}

// Done is closed once the runtime answered the event.
func (inv *Invocation) Done() <-chan struct{} { return inv.done }

// Wait waits until the runtime answered the event or ctx ends.
func (inv *Invocation) Wait(ctx context.Context) error {
	select {
	case <-inv.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Server is the Runtime API of one execution environment.
type server struct {
	opts options
	ln   net.Listener
	srv  *http.Server

	mu        sync.Mutex
	queue     []*Invocation
	byID      map[string]*Invocation
	wake      chan struct{} // closed and replaced when an event is queued
	firstNext time.Time
	initErr   *FunctionError
	initDone  chan struct{} // closed at the first /next or at /init/error
	closed    chan struct{}
	closeOnce sync.Once
}

// Start serves the Runtime API on a free loopback port.
func start(opts options) (*server, error) {
	if opts.FunctionName == "" {
		opts.FunctionName = "function"
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.AccountID == "" {
		opts.AccountID = "123456789012"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 3 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime API: listen on loopback: %w", err)
	}
	s := &server{opts: opts, ln: ln, byID: map[string]*Invocation{}, wake: make(chan struct{}),
		initDone: make(chan struct{}), closed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathNext, s.next)
	mux.HandleFunc("POST /"+apiVersion+"/runtime/invocation/{id}/response", s.response)
	mux.HandleFunc("POST /"+apiVersion+"/runtime/invocation/{id}/error", s.invocationError)
	mux.HandleFunc("POST "+pathInitError, s.initError)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Addr is the "host:port" a runtime finds in AWS_LAMBDA_RUNTIME_API.
func (s *server) Addr() string { return s.ln.Addr().String() }

// FunctionARN is the ARN handed out with each event.
func (s *server) FunctionARN() string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", s.opts.Region, s.opts.AccountID, s.opts.FunctionName)
}

// Close stops serving; a /next still waiting is answered with an error.
func (s *server) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Enqueue queues an event; the runtime gets it from its next /next.
func (s *server) Enqueue(payload []byte) *Invocation {
	return s.EnqueueTraced(payload, "")
}

// EnqueueTraced queues an event with the X-Ray trace header its invoker
// gives it (Lambda-Runtime-Trace-Id: an event source mapping passes on
// the message's, with the lineage Lambda counts); "" is a trace of its own.
func (s *server) EnqueueTraced(payload []byte, traceID string) *Invocation {
	if traceID == "" {
		traceID = newTraceID()
	}
	inv := &Invocation{RequestID: NewRequestID(), Payload: payload, TraceID: traceID, Queued: time.Now(),
		done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, inv)
	s.byID[inv.RequestID] = inv
	close(s.wake)
	s.wake = make(chan struct{})
	return inv
}

// Invoke queues an event and waits for its answer.
func (s *server) Invoke(ctx context.Context, payload []byte) (*Invocation, error) {
	inv := s.Enqueue(payload)
	return inv, inv.Wait(ctx)
}

// InitDone is closed when the runtime's init is over: at its first /next
// (it is ready for events) or at its /init/error.
func (s *server) InitDone() <-chan struct{} { return s.initDone }

// FirstNext is when the runtime first asked for an event (zero before).
func (s *server) FirstNext() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstNext
}

// InitError is what the runtime posted to /init/error, or nil.
func (s *server) InitError() *FunctionError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initErr
}

// next hands out the oldest queued event, waiting for one.
func (s *server) next(w http.ResponseWriter, r *http.Request) {
	for {
		s.mu.Lock()
		if s.firstNext.IsZero() && s.initErr == nil {
			s.firstNext = time.Now()
			close(s.initDone)
		}
		if len(s.queue) > 0 {
			inv := s.queue[0]
			s.queue = s.queue[1:]
			inv.Delivered = time.Now()
			inv.Deadline = inv.Delivered.Add(s.opts.Timeout)
			s.mu.Unlock()
			h := w.Header()
			h.Set(headerRequestID, inv.RequestID)
			h.Set(headerDeadlineMs, strconv.FormatInt(inv.Deadline.UnixMilli(), 10))
			h.Set(headerInvokedFunctionArn, s.FunctionARN())
			h.Set(headerTraceID, inv.TraceID)
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.Write(inv.Payload)
			return
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		case <-s.closed:
			apiError(w, http.StatusInternalServerError, "ServiceShuttingDown", "the runtime API is shutting down")
			return
		}
	}
}

// answerable finds the delivered, unanswered invocation of the request's
// id, or answers 400.
func (s *server) answerable(w http.ResponseWriter, r *http.Request) (*Invocation, bool) {
	s.mu.Lock()
	inv, ok := s.byID[r.PathValue("id")]
	if ok && (inv.Delivered.IsZero() || !inv.Answered.IsZero()) {
		ok = false
	}
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no event in progress has request id "+strconv.Quote(r.PathValue("id")))
	}
	return inv, ok
}

func (s *server) response(w http.ResponseWriter, r *http.Request) {
	inv, ok := s.answerable(w, r)
	if !ok {
		return
	}
	if r.Header.Get("Content-Type") == streamingContentType {
		s.streamResponse(w, r, inv)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxResponseBytes+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "read the response: "+err.Error())
		return
	}
	if len(body) > maxResponseBytes {
		s.finish(inv, nil, "", &FunctionError{Type: "Function.ResponseSizeTooLarge",
			Message: fmt.Sprintf("response payload over %d bytes", maxResponseBytes)})
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "the response is over 6 MB")
		return
	}
	// A runtime that failed while streaming the body says so in trailers.
	answered := false
	if t := r.Trailer.Get(headerFunctionErrorType); t != "" {
		answered = s.finish(inv, nil, "", &FunctionError{Type: t, HeaderType: t, Raw: body})
	} else {
		answered = s.finish(inv, body, r.Header.Get("Content-Type"), nil)
	}
	if !answered {
		apiError(w, http.StatusBadRequest, "InvalidStateTransition", "the event was already answered")
		return
	}
	accepted(w)
}

func (s *server) invocationError(w http.ResponseWriter, r *http.Request) {
	inv, ok := s.answerable(w, r)
	if !ok {
		return
	}
	fe := readFunctionError(r)
	if !s.finish(inv, nil, "", fe) {
		apiError(w, http.StatusBadRequest, "InvalidStateTransition", "the event was already answered")
		return
	}
	accepted(w)
}

func (s *server) initError(w http.ResponseWriter, r *http.Request) {
	fe := readFunctionError(r)
	s.mu.Lock()
	if !s.firstNext.IsZero() || s.initErr != nil {
		s.mu.Unlock()
		apiError(w, http.StatusForbidden, "InvalidStateTransition", "init is already over")
		return
	}
	s.initErr = fe
	close(s.initDone)
	s.mu.Unlock()
	accepted(w)
}

// streamResponse takes a streamed answer: the invocation is answered with
// Stream, which then carries the body as the runtime sends it; the
// request is accepted once the runtime ended it (or the reader closed
// Stream: the rest is not read).
func (s *server) streamResponse(w http.ResponseWriter, r *http.Request, inv *Invocation) {
	pr, pw := io.Pipe()
	s.mu.Lock()
	if !inv.Answered.IsZero() {
		s.mu.Unlock()
		apiError(w, http.StatusBadRequest, "InvalidStateTransition", "the event was already answered")
		return
	}
	inv.Answered = time.Now()
	inv.ContentType, inv.Stream = streamingContentType, pr
	close(inv.done)
	s.mu.Unlock()
	_, err := io.Copy(pw, r.Body)
	if t := r.Trailer.Get(headerFunctionErrorType); t != "" && err == nil {
		err = &FunctionError{Type: t, HeaderType: t, Message: "the function failed while streaming its answer"}
	}
	pw.CloseWithError(err) // nil: the reader gets io.EOF
	accepted(w)
}

// finish records an answer once; false if there already was one.
func (s *server) finish(inv *Invocation, body []byte, contentType string, fe *FunctionError) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !inv.Answered.IsZero() {
		return false
	}
	inv.Answered = time.Now()
	inv.Response, inv.ContentType, inv.Err = body, contentType, fe
	close(inv.done)
	return true
}

func readFunctionError(r *http.Request) *FunctionError {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxResponseBytes))
	fe := &FunctionError{}
	if err := json.Unmarshal(body, fe); err != nil || (fe.Message == "" && fe.Type == "") {
		fe = &FunctionError{Raw: body}
	}
	fe.HeaderType = r.Header.Get(headerFunctionErrorType)
	if t := r.Trailer.Get(headerFunctionErrorType); t != "" {
		fe.HeaderType = t
	}
	return fe
}

func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, `{"status":"OK"}`)
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": msg})
}

// NewRequestID is a random UUID, as Lambda's request ids are.
func NewRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID is an X-Ray trace header for one event, not sampled.
func newTraceID() string {
	var root [12]byte
	var parent [8]byte
	rand.Read(root[:])
	rand.Read(parent[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), hex.EncodeToString(root[:]), hex.EncodeToString(parent[:]))
}

// errProcessExited is returned when the process ended before answering.
var errProcessExited = errors.New("the function's process exited")
