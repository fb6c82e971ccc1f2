package lambdaruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// An environment stays up between invocations, as a warm Lambda
// environment does: the same process answers the second event.
func TestAnEnvironmentAnswersEventAfterEventInOneProcess(t *testing.T) {
	env, err := startEnvironment(testFunction(t, "echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var pids []string
	for _, name := range []string{"one", "two"} {
		inv, err := env.Invoke([]byte(fmt.Sprintf(`{"name":%q}`, name)))
		if err != nil {
			t.Fatal(err)
		}
		if inv.Err != nil || !strings.Contains(string(inv.Response), `"hello":"`+name+`"`) {
			t.Fatalf("event %s: answer %s, error %v", name, inv.Response, inv.Err)
		}
		var answer map[string]string
		if err := json.Unmarshal(inv.Response, &answer); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, answer["pid"])
	}
	if pids[0] != pids[1] {
		t.Errorf("two processes answered (%s, %s), want one warm environment", pids[0], pids[1])
	}
}

// Lambda's rules the process cannot apply itself: past its timeout the
// process is killed and the invocation answers Sandbox.Timedout; a
// process that exits mid-invocation answers Runtime.ExitError; a request
// over 6 MB is refused before the function sees it; a response over 6 MB
// is an error, not an answer. A timed-out or crashed environment takes no
// more events.
func TestLambdasRulesOnAnInvocation(t *testing.T) {
	tests := []struct {
		name     string
		payload  string
		timeout  time.Duration
		wantType string
		wantDead bool
	}{
		{"past its timeout", `{"hang":true}`, time.Second, ErrorTypeTimedOut, true},
		{"a crash", `{"exit":true}`, 20 * time.Second, ErrorTypeExit, true},
		{"a response over 6 MB", fmt.Sprintf(`{"big":%d}`, maxResponseBytes), 20 * time.Second, "Function.ResponseSizeTooLarge", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := testFunction(t, "echo")
			fn.Timeout = tt.timeout
			var logs strings.Builder
			var mu sync.Mutex
			fn.Logs = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
			env, err := startEnvironment(fn)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			inv, err := env.Invoke([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if inv.Err == nil || inv.Err.Type != tt.wantType {
				t.Fatalf("answer %.100s, error %+v; want error type %s", inv.Response, inv.Err, tt.wantType)
			}
			if env.Dead() != tt.wantDead {
				t.Errorf("environment dead %v, want %v", env.Dead(), tt.wantDead)
			}
			if tt.wantDead {
				if _, err := env.Invoke([]byte(`{}`)); err == nil {
					t.Error("a stopped environment took another event")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(logs.String(), "REPORT RequestId: "+inv.RequestID) || !strings.Contains(logs.String(), "Status: "+tt.wantType) {
				t.Errorf("the function's log has no REPORT line with status %s:\n%s", tt.wantType, logs.String())
			}
		})
	}
	t.Run("a request over 6 MB", func(t *testing.T) {
		p := &Pool{Fn: testFunction(t, "echo")}
		defer p.Close()
		big := []byte(`{"name":"` + strings.Repeat("x", maxRequestBytes) + `"}`)
		if _, err := p.Invoke(context.Background(), big); !errors.Is(err, ErrRequestTooLarge) {
			t.Fatalf("error %v, want %v", err, ErrRequestTooLarge)
		}
		if n := len(p.Environments()); n != 0 {
			t.Errorf("%d environments started for a refused request", n)
		}
	})
}

// A pool starts a new environment for an invoke after a crash, and with a
// reserved concurrency of 1 throttles a second invoke while one runs.
func TestAPoolReplacesACrashedEnvironmentAndHoldsItsReservation(t *testing.T) {
	p := &Pool{Fn: testFunction(t, "echo"), Reserved: 1}
	defer p.Close()
	inv, err := p.Invoke(context.Background(), []byte(`{"exit":true}`))
	if err != nil || inv.Err == nil || inv.Err.Type != ErrorTypeExit {
		t.Fatalf("crash: %v, %+v", err, inv)
	}
	inv, err = p.Invoke(context.Background(), []byte(`{"name":"after"}`))
	if err != nil || inv.Err != nil || !strings.Contains(string(inv.Response), `"hello":"after"`) {
		t.Fatalf("after the crash: %v, %+v", err, inv)
	}

	fn := testFunction(t, "echo")
	fn.Timeout = 2 * time.Second
	held := &Pool{Fn: fn, Reserved: 1}
	defer held.Close()
	started := make(chan struct{})
	held.OnStart = func(*Environment) { close(started) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		held.Invoke(context.Background(), []byte(`{"hang":true}`))
	}()
	<-started
	if _, err := held.Invoke(context.Background(), []byte(`{}`)); !errors.Is(err, ErrThrottled) {
		t.Errorf("second invoke while the reservation is in use: %v, want %v", err, ErrThrottled)
	}
	<-done
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
