package webhook_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

type oneRecord struct{ url string }

func (r oneRecord) WebhookRecord(context.Context, domain.WorkKind, string) (webhook.Record, error) {
	return webhook.Record{UserID: "usr_1", Webhook: domain.Webhook{URL: r.url}, Data: map[string]any{"id": "g1"}}, nil
}

type attemptStore struct{ attempts []domain.WebhookAttempt }

func (s *attemptStore) EnsureWebhookSecret(_ context.Context, _, candidate string) (string, error) {
	return candidate, nil
}

func (s *attemptStore) AddWebhookAttempt(_ context.Context, _ domain.WorkKind, _ string, a domain.WebhookAttempt) error {
	s.attempts = append(s.attempts, a)
	return nil
}

// ClaimIdempotencyKey lets every attempt through: these tests make one
// delivery at a time (deliver_test.go claims in a real store).
func (s *attemptStore) ClaimIdempotencyKey(_ context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	return r, true, nil
}

type discardQueue struct{}

func (discardQueue) Send(context.Context, []byte, time.Duration) error { return nil }

// TestAttemptErrorsNameAClassNotTheAddress: each way a delivery can fail,
// made for real on loopback, is reported as its class, and the class says
// nothing of the address or port, nor how a port failed: a closed port, a
// silent one, one that hangs up and one that speaks something else all
// read could_not_connect. A loopback port not allowed is not dialled.
func TestAttemptErrorsNameAClassNotTheAddress(t *testing.T) {
	closed := func() string { // a port nothing listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/hook"
	}
	silent := acceptor(t, func(c net.Conn) { t.Cleanup(func() { c.Close() }) })       // accepts, never answers
	hangUp := acceptor(t, func(c net.Conn) { c.Read(make([]byte, 4096)); c.Close() }) // reads the request, closes
	ssh := acceptor(t, func(c net.Conn) { c.Read(make([]byte, 4096)); c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n")); c.Close() })
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer status.Close()
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer untrusted.Close()

	tests := []struct {
		name, url   string
		portAllowed bool // the URL's loopback port is one the client may reach
		want        string
	}{
		{"nothing listens", closed(), true, domain.WebhookErrorCouldNotConnect},
		{"no answer in time", silent, true, domain.WebhookErrorCouldNotConnect},
		{"closed before answering", hangUp, true, domain.WebhookErrorCouldNotConnect},
		{"another protocol answers", ssh, true, domain.WebhookErrorCouldNotConnect},
		{"an answer other than 2xx", status.URL, true, domain.WebhookErrorHTTPStatus},
		{"a certificate no one vouches for", untrusted.URL, true, domain.WebhookErrorTLS},
		{"a loopback port not allowed", status.URL, false, domain.WebhookErrorAddressNotPublic},
		{"a link-local address", "http://169.254.169.254/latest/meta-data", false, domain.WebhookErrorAddressNotPublic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The attempt's own bound is 10 s; the silent receiver's case
			// stops sooner, the others have time for a loaded machine.
			bound := webhook.Timeout
			if tt.url == silent {
				bound = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			var ports []uint16
			if tt.portAllowed {
				ports = append(ports, portOf(t, tt.url))
			}
			st := &attemptStore{}
			d := &webhook.Deliverer{Records: oneRecord{url: tt.url}, Store: st, Queue: discardQueue{},
				Client: webhook.SafeClient(ports...), Log: slog.New(slog.DiscardHandler)}
			if err := d.Deliver(ctx, webhook.Message{Kind: domain.WorkGeneration, ID: "g1", Event: "generation.completed", Attempt: 1}); err != nil {
				t.Fatalf("Deliver: %v", err)
			}
			if len(st.attempts) != 1 || st.attempts[0].Delivered {
				t.Fatalf("attempts %+v, want one failed", st.attempts)
			}
			if got := st.attempts[0].Error; got != tt.want {
				t.Errorf("the attempt's error is %q, want %q", got, tt.want)
			}
		})
	}
	if got := webhook.Classify(&net.DNSError{Err: "no such host", Name: "hooks.example", IsNotFound: true}); got != domain.WebhookErrorDNS {
		t.Errorf("a name that does not resolve: %s, want %s", got, domain.WebhookErrorDNS)
	}
	if got := webhook.Classify(fmt.Errorf("encode: %w", fmt.Errorf("odd"))); got != domain.WebhookErrorCouldNotConnect {
		t.Errorf("an unknown error: %s, want %s", got, domain.WebhookErrorCouldNotConnect)
	}
	for _, c := range domain.WebhookErrorClasses {
		if strings.ContainsAny(c, ".:/ ") {
			t.Errorf("class %q looks like an address or a message", c)
		}
	}
}

// acceptor listens on loopback, hands each connection to handle and returns
// a URL of it.
func acceptor(t *testing.T, handle func(net.Conn)) string {
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
			handle(c)
		}
	}()
	return "http://" + l.Addr().String() + "/hook"
}

// portOf is the port of a loopback URL.
func portOf(t *testing.T, raw string) uint16 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil {
		t.Fatalf("port of %s: %v", raw, err)
	}
	return uint16(n)
}

// TestAttemptsRecordedBeforeReadAsTodaysClasses: the classes of attempts
// recorded before could_not_connect, which told how a port failed, read
// as it; today's pass unchanged.
func TestAttemptsRecordedBeforeReadAsTodaysClasses(t *testing.T) {
	for stored, want := range map[string]string{
		"connection_refused": domain.WebhookErrorCouldNotConnect, "connection_reset": domain.WebhookErrorCouldNotConnect,
		"timeout": domain.WebhookErrorCouldNotConnect, "request_failed": domain.WebhookErrorCouldNotConnect,
		domain.WebhookErrorHTTPStatus: domain.WebhookErrorHTTPStatus, domain.WebhookErrorTLS: domain.WebhookErrorTLS, "": "",
	} {
		if got := domain.CurrentWebhookErrorClass(stored); got != want {
			t.Errorf("domain.CurrentWebhookErrorClass(%q) = %q, want %q", stored, got, want)
		}
	}
}
