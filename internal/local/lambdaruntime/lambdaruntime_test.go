package lambdaruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// envHandler makes the test binary, started again by a test, a Lambda
// function: aws-lambda-go's lambda.Start against the emulator, as a
// function's bootstrap runs.
const envHandler = "LAMBDARUNTIME_TEST_HANDLER"

func TestMain(m *testing.M) {
	switch os.Getenv(envHandler) {
	case "":
		os.Exit(m.Run())
	case "init-fails":
		fmt.Println("init failed on purpose")
		os.Exit(1)
	default:
		lambda.Start(testHandler)
	}
}

type testEvent struct {
	Name string `json:"name"`
	Fail bool   `json:"fail"`
	// Hang never answers; Exit ends the process mid-invocation; Big
	// answers this many bytes.
	Hang bool `json:"hang"`
	Exit bool `json:"exit"`
	Big  int  `json:"big"`
}

// testHandler answers with what it learnt from the Runtime API and the
// environment, or fails when asked to.
func testHandler(ctx context.Context, ev testEvent) (map[string]string, error) {
	if ev.Fail {
		return nil, errors.New("failed on purpose")
	}
	if ev.Hang {
		<-make(chan struct{})
	}
	if ev.Exit {
		os.Exit(3)
	}
	if ev.Big > 0 {
		return map[string]string{"big": strings.Repeat("x", ev.Big)}, nil
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	wd, _ := os.Getwd()
	return map[string]string{
		"hello":       ev.Name,
		"request_id":  lc.AwsRequestID,
		"arn":         lc.InvokedFunctionArn,
		"deadline_ms": strconv.FormatInt(deadline.UnixMilli(), 10),
		"trace_id":    os.Getenv("_X_AMZN_TRACE_ID"),
		"function":    lambdacontext.FunctionName,
		"memory":      strconv.Itoa(lambdacontext.MemoryLimitInMB),
		"region":      os.Getenv("AWS_REGION"),
		"own_var":     os.Getenv("OWN_VAR"),
		"home":        os.Getenv("HOME"),
		"wd":          wd,
		"pid":         strconv.Itoa(os.Getpid()),
	}, nil
}

func testFunction(t *testing.T, mode string) Function {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	return Function{Name: "echo", Bootstrap: self, TaskRoot: root, MemoryMB: 256, Timeout: 20 * time.Second, Region: "eu-west-1",
		Env: map[string]string{envHandler: mode, "OWN_VAR": "mine", "AWS_REGION": "overridden-by-lambda"}}
}

// A function built on aws-lambda-go gets its event from /next with the
// documented headers, answers on /response, and the emulator hands back
// what it answered with the times it recorded.
func TestAFunctionProcessGetsItsEventAndAnswers(t *testing.T) {
	fn := testFunction(t, "echo")
	cs, err := RunColdStart(context.Background(), fn, []byte(`{"name":"world"}`), []byte(`{"name":"again"}`))
	if err != nil {
		t.Fatal(err)
	}
	inv := cs.Invocation
	if inv.Err != nil {
		t.Fatalf("the function failed: %v", inv.Err)
	}
	var got map[string]string
	if err := json.Unmarshal(inv.Response, &got); err != nil {
		t.Fatalf("response %s: %v", inv.Response, err)
	}
	want := map[string]string{
		"hello": "world", "request_id": inv.RequestID, "arn": "arn:aws:lambda:eu-west-1:123456789012:function:echo",
		"deadline_ms": strconv.FormatInt(inv.Deadline.UnixMilli(), 10), "trace_id": inv.TraceID,
		"function": "echo", "memory": "256", "region": "eu-west-1", "own_var": "mine", "home": "", "wd": fn.TaskRoot,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: the function saw %q, want %q", k, got[k], v)
		}
	}
	if !strings.HasPrefix(inv.TraceID, "Root=1-") {
		t.Errorf("trace id %q is not an X-Ray trace header", inv.TraceID)
	}
	if !(inv.Queued.Before(inv.Delivered) || inv.Queued.Equal(inv.Delivered)) || inv.Answered.Before(inv.Delivered) {
		t.Errorf("times out of order: queued %v, delivered %v, answered %v", inv.Queued, inv.Delivered, inv.Answered)
	}
	if len(cs.Later) != 1 || len(cs.Warm) != 1 {
		t.Fatalf("warm events %+v, want the one sent", cs.Later)
	}
	var warm map[string]string
	json.Unmarshal(cs.Later[0].Response, &warm)
	if warm["hello"] != "again" || warm["pid"] != got["pid"] || cs.Later[0].RequestID == inv.RequestID {
		t.Errorf("the warm event's answer %s, want one from the same process (pid %s) under a new request id", cs.Later[0].Response, got["pid"])
	}
	if cs.Init <= 0 || cs.FirstEvent < 0 || cs.Total < cs.Init+cs.FirstEvent {
		t.Errorf("timings do not add up: init %v, first event %v, total %v", cs.Init, cs.FirstEvent, cs.Total)
	}
}

// A handler's error reaches /error as Lambda's error document; it is the
// invocation's answer, not a failure of the start.
func TestAFunctionErrorIsTheAnswer(t *testing.T) {
	cs, err := RunColdStart(context.Background(), testFunction(t, "echo"), []byte(`{"fail":true}`))
	if err != nil {
		t.Fatal(err)
	}
	fe := cs.Invocation.Err
	if fe == nil {
		t.Fatalf("no error recorded; response %s", cs.Invocation.Response)
	}
	if fe.Message != "failed on purpose" || fe.Type == "" {
		t.Errorf("error %+v, want errorMessage \"failed on purpose\" and an errorType", fe)
	}
	if cs.Invocation.Response != nil {
		t.Errorf("a failed invocation has the response %s", cs.Invocation.Response)
	}
}

// A process that exits during its init fails the start with its output.
func TestAnInitThatExitsFailsTheStart(t *testing.T) {
	_, err := RunColdStart(context.Background(), testFunction(t, "init-fails"), []byte(`{}`))
	if err == nil || !errors.Is(err, errProcessExited) || !strings.Contains(err.Error(), "init failed on purpose") {
		t.Fatalf("error %v, want the exit before the first event with the function's output", err)
	}
}

// The protocol at the HTTP level, with this test as the runtime.
func TestRuntimeAPIProtocol(t *testing.T) {
	srv, err := start(options{FunctionName: "raw", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := "http://" + srv.Addr()
	post := func(path, body string, header http.Header) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	next := func() (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(base + pathNext)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}

	// /next waits for an event.
	type got struct {
		resp *http.Response
		body string
	}
	ch := make(chan got, 1)
	go func() { r, b := next(); ch <- got{r, b} }()
	select {
	case <-srv.InitDone():
	case <-time.After(10 * time.Second):
		t.Fatal("the first /next did not end the init")
	}
	select {
	case g := <-ch:
		t.Fatalf("/next answered %d %s with no event queued", g.resp.StatusCode, g.body)
	case <-time.After(50 * time.Millisecond):
	}
	first := srv.Enqueue([]byte(`{"n":1}`))
	g := <-ch
	if g.resp.StatusCode != http.StatusOK || g.body != `{"n":1}` {
		t.Fatalf("/next: %d %s", g.resp.StatusCode, g.body)
	}
	h := g.resp.Header
	if h.Get(headerRequestID) != first.RequestID || h.Get(headerTraceID) != first.TraceID ||
		h.Get(headerInvokedFunctionArn) != "arn:aws:lambda:us-east-1:123456789012:function:raw" {
		t.Errorf("/next headers %v", h)
	}
	if ms, err := strconv.ParseInt(h.Get(headerDeadlineMs), 10, 64); err != nil || time.UnixMilli(ms).Before(time.Now().Add(50*time.Second)) {
		t.Errorf("deadline %q, want about a minute from now", h.Get(headerDeadlineMs))
	}

	// Answers.
	if code, body := post("/"+apiVersion+"/runtime/invocation/nope/response", `{}`, nil); code != http.StatusBadRequest {
		t.Errorf("response for an unknown id: %d %s, want 400", code, body)
	}
	path := "/" + apiVersion + "/runtime/invocation/" + first.RequestID
	if code, body := post(path+"/response", `{"ok":true}`, http.Header{"Content-Type": {"application/json"}}); code != http.StatusAccepted {
		t.Fatalf("response: %d %s, want 202", code, body)
	}
	<-first.Done()
	if string(first.Response) != `{"ok":true}` || first.ContentType != "application/json" || first.Err != nil {
		t.Errorf("recorded %s (%s), error %v", first.Response, first.ContentType, first.Err)
	}
	if code, _ := post(path+"/response", `{}`, nil); code != http.StatusBadRequest {
		t.Errorf("a second answer: %d, want 400", code)
	}

	second := srv.Enqueue([]byte(`{"n":2}`))
	if _, body := next(); body != `{"n":2}` {
		t.Fatalf("second event %s", body)
	}
	code, _ := post("/"+apiVersion+"/runtime/invocation/"+second.RequestID+"/error",
		`{"errorMessage":"boom","errorType":"Handled"}`, http.Header{headerFunctionErrorType: {"Runtime.Handled"}})
	if code != http.StatusAccepted {
		t.Fatalf("error: %d, want 202", code)
	}
	<-second.Done()
	if e := second.Err; e == nil || e.Message != "boom" || e.Type != "Handled" || e.HeaderType != "Runtime.Handled" {
		t.Errorf("recorded error %+v", e)
	}

	// Init is over: an init error now is refused.
	if code, _ := post(pathInitError, `{"errorMessage":"late","errorType":"X"}`, nil); code != http.StatusForbidden {
		t.Errorf("init error after init: %d, want 403", code)
	}
}

func TestInitErrorIsRecorded(t *testing.T) {
	srv, err := start(options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Post("http://"+srv.Addr()+pathInitError, "application/json",
		strings.NewReader(`{"errorMessage":"no config","errorType":"Runtime.InitError"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("init error: %d, want 202", resp.StatusCode)
	}
	<-srv.InitDone()
	if fe := srv.InitError(); fe == nil || fe.Message != "no config" || fe.Type != "Runtime.InitError" {
		t.Errorf("recorded %+v", fe)
	}
	if !srv.FirstNext().IsZero() {
		t.Error("an init error counted as the first /next")
	}
}

// An invoker's trace header is the one the function gets
// (Lambda-Runtime-Trace-Id, which aws-lambda-go puts in _X_AMZN_TRACE_ID
// for the SDK to send on): an event source mapping passes on the
// message's, with its lineage; without one the event gets a trace of its
// own.
func TestAnInvocationCarriesItsInvokersTraceHeader(t *testing.T) {
	p := &Pool{Fn: testFunction(t, "echo")}
	defer p.Close()
	tests := []struct{ name, trace string }{
		{"given", "Root=1-6553f100-0123456789abcdef01234567;Parent=89abcdef01234567;Sampled=0;Lineage=a87bd80c:3"},
		{"its own", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := p.InvokeTraced(context.Background(), []byte(`{"name":"trace"}`), tt.trace)
			if err != nil || inv.Err != nil {
				t.Fatalf("invoke: %v %v", err, inv.Err)
			}
			var got map[string]string
			json.Unmarshal(inv.Response, &got)
			want := tt.trace
			if want == "" {
				want = inv.TraceID
				if !strings.HasPrefix(want, "Root=1-") {
					t.Errorf("trace id %q is not an X-Ray trace header", want)
				}
			}
			if got["trace_id"] != want || inv.TraceID != want {
				t.Errorf("the function saw trace %q (handed out %q), want %q", got["trace_id"], inv.TraceID, want)
			}
		})
	}
}
