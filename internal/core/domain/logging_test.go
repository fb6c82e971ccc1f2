package domain_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// TestLoggedValuesAreBounded: every place a long value can reach a log
// line (the message, a string, an error, a byte slice, a group, the
// logger's own attributes, a group name) is cut to MaxLogValue with its
// length said; short values pass as they are.
func TestLoggedValuesAreBounded(t *testing.T) {
	long := strings.Repeat("k", 500<<10)
	tests := []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"a message", func(l *slog.Logger) { l.Info(long) }},
		{"a string", func(l *slog.Logger) { l.Info("m", "kid", long) }},
		{"an error", func(l *slog.Logger) { l.Info("m", "error", errors.New(long)) }},
		{"bytes", func(l *slog.Logger) { l.Info("m", "body", []byte(long)) }},
		{"a group", func(l *slog.Logger) { l.Info("m", slog.Group("token", "kid", long)) }},
		{"the logger's attributes", func(l *slog.Logger) { l.With("kid", long).Info("m") }},
		{"a group's name", func(l *slog.Logger) { l.WithGroup(long).Info("m", "a", 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(domain.NewJSONLogger(&buf, nil))
			line := buf.String()
			if len(line) > 2*domain.MaxLogValue+512 {
				t.Errorf("a %d-byte line, want at most about %d", len(line), 2*domain.MaxLogValue)
			}
			if !strings.Contains(line, "truncated, 512000 bytes") {
				t.Errorf("the line does not say what was cut: %.300s", line)
			}
		})
	}
	var buf bytes.Buffer
	l := domain.Bounded(slog.New(slog.NewJSONHandler(&buf, nil)))
	if domain.Bounded(l) != l {
		t.Error("Bounded wraps a bounded logger again")
	}
	l.Info("short", "kid", "rsa-1", "error", errors.New("unknown key"), "n", 3)
	if got := buf.String(); !strings.Contains(got, `"msg":"short","kid":"rsa-1","error":"unknown key","n":3`) {
		t.Errorf("short values changed: %s", got)
	}
}

// TestTheLogThrottleLetsOneLineAWindowPerKey: within a window one line a
// key passes; the first after it says how many were held back; keys do
// not throttle each other.
func TestTheLogThrottleLetsOneLineAWindowPerKey(t *testing.T) {
	var th domain.LogThrottle
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	if ok, held := th.Allow("key:a", now); !ok || held != 0 {
		t.Fatalf("the first line: %v, %d held", ok, held)
	}
	for i := range 29 {
		if ok, _ := th.Allow("key:a", now.Add(time.Duration(i)*time.Second)); ok {
			t.Fatalf("line %d within the minute passed", i+2)
		}
	}
	if ok, _ := th.Allow("key:b", now.Add(time.Second)); !ok {
		t.Error("another key was throttled by the first")
	}
	if ok, held := th.Allow("key:a", now.Add(time.Minute)); !ok || held != 29 {
		t.Errorf("the first line after the minute: %v, %d held; want it with 29 held", ok, held)
	}
	if ok, held := th.Allow("key:a", now.Add(2*time.Minute)); !ok || held != 0 {
		t.Errorf("a minute later: %v, %d held; want it with none", ok, held)
	}
}
