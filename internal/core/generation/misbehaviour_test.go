package generation_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
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
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// misbehaviour is one way the provider can go wrong: create answers a
// submission, get answers a read of the job, and file serves outputs.
type misbehaviour struct {
	name           string
	create, get    http.HandlerFunc
	file           http.HandlerFunc
	hang           bool // the server accepts connections and never answers
	reset          bool // the server closes every connection at once
	createRefused  bool // Create itself answers ErrUpstreamUnavailable (or refusedWith)
	refusedWith    error
	says           string
	maxUpstreamHit int32 // bound on the requests one generation may cause
}

// overCap is an answer larger than the upstream client reads.
var overCap = `{"id":"job1","status":"processing","logs":"` + strings.Repeat("x", 2<<20) + `"}`

func answer(code int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		w.Write([]byte(body))
	}
}

func started(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(`{"id":"job1","status":"starting"}`))
}

// succeededWith answers a finished job whose outputs are the given paths
// on the server itself (or absolute URLs).
func succeededWith(outputs ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list := make([]string, len(outputs))
		for i, o := range outputs {
			if strings.HasPrefix(o, "/") {
				o = "http://" + r.Host + o
			}
			list[i] = fmt.Sprintf("%q", o)
		}
		fmt.Fprintf(w, `{"id":"job1","status":"succeeded","output":[%s]}`, strings.Join(list, ","))
	}
}

// TestUpstreamMisbehaviourEndsFailedAndRefunded drives one image
// generation (the real client, copier and store against a scripted
// provider over HTTP) through each misbehaviour: every case ends failed
// with an error that says what went wrong and the whole hold released,
// after a bounded number of requests, without a hang or a panic.
func TestUpstreamMisbehaviourEndsFailedAndRefunded(t *testing.T) {
	var pngFile bytes.Buffer
	png.Encode(&pngFile, image.NewRGBA(image.Rect(0, 0, 8, 8)))
	huge := make([]byte, 3<<20)
	copy(huge, pngFile.Bytes())
	servePNG := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { w.Write(body) }
	}
	cases := []misbehaviour{
		{name: "5xx on every read", get: answer(503, nil, `{"detail":"overloaded"}`), says: "upstream unreachable: scripted answered HTTP 503: overloaded"},
		{name: "429 with Retry-After on every read", get: answer(429, map[string]string{"Retry-After": "1"}, `{"detail":"slow down"}`), says: "HTTP 429: slow down"},
		{name: "429 with a huge Retry-After", get: answer(429, map[string]string{"Retry-After": "86400"}, `{"detail":"come back tomorrow"}`), says: "HTTP 429"},
		{name: "5xx on submission", create: answer(502, nil, `bad gateway`), createRefused: true},
		{name: "429 on submission", create: answer(429, map[string]string{"Retry-After": "2"}, `{"detail":"quota"}`), createRefused: true},
		{name: "4xx on submission", create: answer(422, nil, `{"detail":"invalid input"}`), createRefused: true, refusedWith: generation.ErrUpstreamRefused},
		{name: "timeouts", hang: true, createRefused: true},
		{name: "connection resets", reset: true, createRefused: true},
		{name: "malformed JSON", get: answer(200, nil, `{"id":"job1","status":`), says: "upstream scripted sent an answer that does not follow its protocol"},
		{name: "an unknown status", get: answer(200, nil, `{"id":"job1","status":"exploded"}`), says: `unknown status "exploded"`},
		{name: "a prediction without id", get: answer(200, nil, `{"status":"succeeded","output":["x"]}`), says: "prediction without id"},
		{name: "an answer over the cap", get: answer(200, nil, overCap), says: "answer over"},
		{name: "an answer that declares more than the cap", get: answer(200, map[string]string{"Content-Length": strconv.Itoa(len(overCap))}, overCap), says: "answer over"},
		{name: "4xx on read", get: answer(404, nil, `{"detail":"no such prediction"}`), says: "HTTP 404: no such prediction"},
		{name: "missing outputs", get: answer(200, nil, `{"id":"job1","status":"succeeded","output":null}`), says: "the provider returned no output"},
		{name: "empty output list", get: answer(200, nil, `{"id":"job1","status":"succeeded","output":[]}`), says: "the provider returned no output"},
		{name: "empty output URL", get: answer(200, nil, `{"id":"job1","status":"succeeded","output":[""]}`), says: "output 0 is empty"},
		{name: "output holds no URL", get: answer(200, nil, `{"id":"job1","status":"succeeded","output":{"a":1}}`), says: "the provider returned no output"},
		{name: "output on another host", get: succeededWith("https://cdn.elsewhere.example/a.png"), says: "copy output 0: output rejected: output host is not the upstream's"},
		{name: "output on the upstream's host but another port", get: succeededWith("http://127.0.0.1:1/a.png"), says: "copy output 0: output rejected: output host is not the upstream's"},
		{name: "output on a link-local address", get: succeededWith("http://169.254.169.254/latest/meta-data"), says: "is not the upstream's"},
		{name: "output not http", get: succeededWith("file:///etc/passwd"), says: "is not an http(s) URL"},
		{name: "output larger than the cap (declared)", get: succeededWith("/files/huge.png"), file: servePNG(huge), says: "over the 1048576 byte cap"},
		{name: "output larger than the cap (streamed)", get: succeededWith("/files/huge.png"), file: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.(http.Flusher).Flush() // chunked: no Content-Length
			w.Write(huge)
		}, says: "over the 1048576 byte cap"},
		{name: "output of the wrong type", get: succeededWith("/files/a.png"), file: answer(200, map[string]string{"Content-Type": "image/png"}, "<html><body>not an image</body></html>"), says: "output is text/html, want a png, jpeg or webp image"},
		{name: "output a video where an image was asked", get: succeededWith("/files/a.mp4"), file: servePNG([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom")), says: "output is video/mp4, want a png"},
		{name: "output that cannot be fetched", get: succeededWith("/files/gone.png"), file: answer(410, nil, "gone"), says: "HTTP 410"},
		{name: "output redirected to another host", get: succeededWith("/files/moved.png"), file: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		}, says: "not the upstream's"},
		{name: "job failed upstream", get: answer(200, nil, `{"id":"job1","status":"failed","error":"NSFW"}`), says: "upstream: NSFW"},
		{name: "job canceled upstream", get: answer(200, nil, `{"id":"job1","status":"canceled"}`), says: "upstream: the job was canceled upstream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int32
			var srvURL string
			switch {
			case tc.hang:
				srvURL = hangingServer(t, &hits)
			case tc.reset:
				srvURL = resettingServer(t, &hits)
			default:
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					hits.Add(1)
					h := tc.get
					switch {
					case strings.HasPrefix(r.URL.Path, "/files/"):
						h = tc.file
					case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
						h = answer(200, nil, `{"latest_version":{"openapi_schema":{"components":{"schemas":{"Input":{"properties":{"prompt":{"type":"string"}}}}}}}}`)
					case r.Method == http.MethodGet && r.URL.Path == "/v1/predictions":
						h = answer(200, nil, `{"next":null,"results":[]}`)
					case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
						h = answer(200, nil, `{"id":"job1","status":"canceled"}`)
					case r.Method == http.MethodPost:
						h = tc.create
						if h == nil {
							h = started
						}
					}
					if h == nil {
						h = answer(200, nil, `{"id":"job1","status":"processing"}`)
					}
					h(w, r)
				}))
				t.Cleanup(srv.Close)
				srvURL = srv.URL
			}
			runMisbehaviour(t, tc, srvURL, &hits)
		})
	}
}

// runMisbehaviour creates the generation and delivers its polls until it
// is final.
func runMisbehaviour(t *testing.T, tc misbehaviour, srvURL string, hits *atomic.Int32) {
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
	u, _ := url.Parse(srvURL)
	now := time.Now().UTC()
	q := &sentQueue{}
	// A short timeout only where the provider hangs: a create that times
	// out is never sent again, so a slow machine must not time out the
	// others' creates.
	timeout := 10 * time.Second
	if tc.hang {
		timeout = 200 * time.Millisecond
	}
	router, err := upstream.NewRouter(routing.Single("scripted", routing.ProtocolReplicate, srvURL, []string{u.Host}),
		func(*routing.Upstream) (string, error) { return "tok", nil }, nil,
		upstream.Tuning{Attempts: 3, BaseBackoff: time.Millisecond, MaxRetryAfter: 20 * time.Millisecond,
			HTTP: &http.Client{Timeout: timeout}, MaxAnswer: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	svc := &generation.Service{
		Store:     st,
		Upstreams: router,
		Queue:     q,
		Copier:    &media.Copier{Bucket: objects.MediaBucket(), HTTP: &http.Client{Timeout: time.Second}, AllowedHosts: []string{u.Host}, MaxBytes: 1 << 20, AllowLoopback: true},
		Outputs:   objects.MediaBucket(),
		Prices:    pricing.Default(),
		Settings:  generation.Settings{Now: func() time.Time { return now }, Log: quiet()},
	}
	acct, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(100)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := generation.NewCreator(svc.Store, svc.Upstreams, svc.Queue, svc.Slots, svc.Inputs, svc.Prices, svc.Settings).Create(ctx, acct.UserID, []byte(`{"model":"provider-a","model_version":"zeta","input":{"prompt":"a cat"}}`))
	if tc.createRefused {
		want := tc.refusedWith
		if want == nil {
			want = generation.ErrUpstreamUnavailable
		}
		if !errors.Is(err, want) {
			t.Fatalf("Create = %v, want %v", err, want)
		}
	} else {
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if i > 2*generation.MaxConsecutiveErrors+2 {
				t.Fatalf("still processing after %d polls", i)
			}
			got, err := st.GetGeneration(ctx, g.UUID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != domain.StatusProcessing {
				if got.Status != domain.StatusFailed || !strings.Contains(got.Error, tc.says) {
					t.Errorf("ended %s %q, want failed saying %q", got.Status, got.Error, tc.says)
				}
				break
			}
			m := q.msgs[len(q.msgs)-1]
			now = now.Add(q.lag[len(q.lag)-1])
			if err := svc.Poll(ctx, m); err != nil {
				t.Fatalf("Poll: %v", err)
			}
		}
	}
	a, err := st.GetAccount(ctx, acct.UserID)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Held.IsZero() || !a.Captured.IsZero() {
		t.Errorf("balance %s held %s captured %s, want all 100 back", a.Balance, a.Held, a.Captured)
	}
	if left, _ := st.ProcessingGenerations(ctx, 10); len(left) != 0 {
		t.Errorf("%d generations left processing", len(left))
	}
	// Bounded: 3 tries per call, at most MaxConsecutiveErrors polls.
	if n := hits.Load(); n > 3*(generation.MaxConsecutiveErrors+2) {
		t.Errorf("%d requests to the provider for one generation", n)
	}
}

// hangingServer accepts connections and never answers.
func hangingServer(t *testing.T, hits *atomic.Int32) string {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	return srv.URL
}

// resettingServer closes every connection as soon as it is made.
func resettingServer(t *testing.T, hits *atomic.Int32) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, not FIN
			}
			c.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }
