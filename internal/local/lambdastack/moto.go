package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// Moto is moto's server with IAM enforcement, behind a proxy of this
// process that writes the access log (who called what, and each error's
// code) and passes DynamoDB one request at a time: moto runs each request
// on a thread of its own with no per-item lock, where DynamoDB's
// single-item writes are atomic (testsupport.DynamoDB says more).
type Moto struct {
	// Endpoint is the proxy's URL: what every client and function uses.
	Endpoint string
	// Server is moto's own URL.
	Server string
	moto   *testsupport.MotoServer
	proxy  *http.Server

	observer atomic.Pointer[func(Exchange)]

	mu      sync.Mutex
	log     io.Writer
	callers map[string]string // access key id -> who holds it
	errors  []Call
	stalls  map[string]*stall // by caller (Stall)
	// traces are the trace headers messages were sent with, by message
	// id (sqstrace.go).
	traces map[string]string

	// intercept, when set, answers the requests the stack serves itself
	// (the Step Functions API, Polly) and reports that it did.
	intercept atomic.Pointer[func(http.ResponseWriter, *http.Request) bool]
}

// Call is one request that moto answered with an error.
type Call struct {
	Time time.Time `json:"time"`
	// Caller is the function (or "admin") whose access key signed it.
	Caller string `json:"caller"`
	Action string `json:"action"`
	Status int    `json:"status"`
	// Code is the error's code (AccessDenied, AccessDeniedException,
	// ConditionalCheckFailedException, ...).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Exchange is one JSON-protocol request (DynamoDB, SQS, Secrets Manager,
// Step Functions) and moto's answer, as Observe shows it.
type Exchange struct {
	// Caller is the function (or "admin") whose access key signed it.
	Caller, Action    string
	Status            int
	Request, Response []byte
}

// Observe has f told of each JSON-protocol request moto answered, after
// moto applied it and before its caller has the answer (so f can stop the
// caller's process between a write and its reply, as a crash does), until
// stop is called. One observer at a time.
func (m *Moto) Observe(f func(Exchange)) (stop func()) {
	m.observer.Store(&f)
	return func() { m.observer.Store(nil) }
}

type requestBody struct{}

// startMoto starts moto_server on a free loopback port with IAM checks off
// for now (Enforce turns them on), loading AWS's managed policies, and
// its proxy; accessLog gets one JSON line per request.
func startMoto(ctx context.Context, accessLog, serverLog io.Writer) (*Moto, error) {
	// moto's server with the repository's two fixes (scripts/moto_server.py):
	// a cancelled transaction restores the items it named, and a signature
	// is checked against the query string as it was sent.
	// INITIAL_NO_AUTH_ACTION_COUNT: this many calls go unchecked; the
	// set-up resets it to 0 (Enforce) once the roles exist, and from then
	// on every call must be signed by an identity whose policies allow its
	// action.
	server, err := testsupport.StartMoto(ctx, []string{"INITIAL_NO_AUTH_ACTION_COUNT=1000000", "MOTO_IAM_LOAD_MANAGED_POLICIES=true"}, serverLog, 60*time.Second)
	if err != nil {
		return nil, err
	}
	m := &Moto{Server: server.URL, moto: server, log: accessLog, callers: map[string]string{}}
	if err := m.startProxy(); err != nil {
		m.Stop()
		return nil, err
	}
	return m, nil
}

// Enforce turns IAM on: every call from now on is checked.
func (m *Moto) Enforce(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.Server+"/moto-api/reset-auth", strings.NewReader("0"))
	if err != nil {
		return err
	}
	// moto reads the count from the raw body, which Flask keeps only for
	// a type it does not parse as a form.
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("turn moto's IAM checks on: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("turn moto's IAM checks on: HTTP %d %s", resp.StatusCode, body)
	}
	return nil
}

// nameKey records who holds an access key, for the log.
func (m *Moto) nameKey(accessKeyID, who string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.callers[accessKeyID] = who
}

// Errors are the calls moto answered with an error, in order.
func (m *Moto) Errors() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Call(nil), m.errors...)
}

// Denials are the calls moto refused for want of a permission.
func (m *Moto) Denials() []Call {
	var out []Call
	for _, c := range m.Errors() {
		if isDenial(c.Code) {
			out = append(out, c)
		}
	}
	return out
}

// isDenial reports whether an error code is IAM's refusal.
func isDenial(code string) bool { return strings.HasPrefix(code, "AccessDenied") }

// Stop closes the proxy and ends moto's server by its process id.
func (m *Moto) Stop() {
	if m == nil {
		return
	}
	if m.proxy != nil {
		m.proxy.Close()
	}
	m.moto.Stop()
}

var credentialKey = regexp.MustCompile(`Credential=([A-Z0-9]+)/`)

func (m *Moto) startProxy() error {
	target, err := url.Parse(m.Server)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for moto's proxy: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if req, ok := resp.Request.Context().Value(requestBody{}).([]byte); ok {
			if f := m.observer.Load(); f != nil {
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					return err
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				(*f)(Exchange{Caller: m.caller(resp.Request), Action: action(resp.Request), Status: resp.StatusCode, Request: req, Response: body})
			}
		}
		if resp.StatusCode < 400 {
			return m.traceResponse(resp)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return err
		}
		code, msg := errorCode(body)
		m.record(resp.Request, resp.StatusCode, code, msg)
		if jsonProtocol(resp.Request) && bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) && code != "" {
			// moto answers IAM's refusal in XML to every protocol; AWS
			// answers a JSON-protocol request (DynamoDB, SQS, Secrets
			// Manager, Step Functions) in JSON, which is what the SDK
			// reads the error's code from.
			if isDenial(code) {
				code = "AccessDeniedException"
			}
			body, _ = json.Marshal(map[string]string{"__type": code, "message": msg})
			resp.Header.Set("Content-Type", "application/x-amz-json-1.0")
			resp.Header.Set("X-Amzn-Query-Error", code+";Sender")
			resp.Header.Del("Content-Length")
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	var dynamo sync.Mutex
	m.proxy = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := m.intercept.Load(); f != nil && (*f)(w, r) {
			return
		}
		if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_") {
			dynamo.Lock()
			defer dynamo.Unlock()
		}
		if m.observer.Load() != nil && jsonProtocol(r) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r = r.WithContext(context.WithValue(r.Context(), requestBody{}, body))
		}
		rp.ServeHTTP(w, noteTraceRequest(r))
	})}
	go m.proxy.Serve(ln)
	m.Endpoint = "http://" + ln.Addr().String()
	return nil
}

// record logs a call moto answered with an error.
func (m *Moto) record(r *http.Request, status int, code, msg string) {
	m.recordCall(Call{Action: action(r), Status: status, Code: code, Message: msg, Caller: m.caller(r)})
}

// recordCall logs a failed call: one moto answered, or one the stack
// decided for AWS (a service's own call with its role, such as Step
// Functions invoking a function).
func (m *Moto) recordCall(c Call) {
	c.Time = time.Now().UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors = append(m.errors, c)
	if m.log != nil {
		line, _ := json.Marshal(c)
		m.log.Write(append(line, '\n'))
	}
}

// caller names who signed a request: the function (or "admin") holding
// its access key.
func (m *Moto) caller(r *http.Request) string {
	k := credentialKey.FindStringSubmatch(r.Header.Get("Authorization"))
	if k == nil {
		return "unsigned"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if who := m.callers[k[1]]; who != "" {
		return who
	}
	return k[1]
}

// jsonProtocol reports whether a request uses AWS's JSON protocol.
func jsonProtocol(r *http.Request) bool {
	return r.Header.Get("X-Amz-Target") != "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json")
}

// action names a request: its X-Amz-Target (DynamoDB, SQS, Secrets
// Manager, Step Functions), or its method and path (S3, IAM).
func action(r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		return t
	}
	return r.Method + " " + r.URL.Path
}

var (
	xmlCode    = regexp.MustCompile(`<Code>([^<]+)</Code>`)
	xmlMessage = regexp.MustCompile(`<Message>([^<]*)</Message>`)
)

// errorCode finds an error's code and message in a JSON (__type) or XML
// (<Code>) error body.
func errorCode(body []byte) (code, msg string) {
	var doc struct {
		Type     string `json:"__type"`
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Type != "" {
		code = doc.Type
		if i := strings.LastIndex(code, "#"); i >= 0 {
			code = code[i+1:]
		}
		return code, doc.Message + doc.Message2
	}
	if c := xmlCode.FindSubmatch(body); c != nil {
		code = string(c[1])
	}
	if mm := xmlMessage.FindSubmatch(body); mm != nil {
		msg = string(mm[1])
	}
	return code, msg
}

var errNotModelled = errors.New("not modelled by the local stack")
