package domain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// MaxLogValue bounds each logged string (a message, an attribute's value,
// an error's text): values that callers or attackers choose (a 500 KB JWT
// kid, an upstream's echoed input) must not make log lines that cost
// money to store or drown the others.
const MaxLogValue = 2048

// NewJSONLogger is the service's logger: slog JSON lines on w, every value
// bounded to MaxLogValue (BoundedHandler).
func NewJSONLogger(w io.Writer, opts *slog.HandlerOptions) *slog.Logger {
	return slog.New(BoundedHandler(slog.NewJSONHandler(w, opts)))
}

// Bounded is l with every value bounded to MaxLogValue; l itself when it
// already is, and slog's default logger, bounded, for nil.
func Bounded(l *slog.Logger) *slog.Logger {
	l = Logger(l)
	if _, ok := l.Handler().(boundedHandler); ok {
		return l
	}
	return slog.New(BoundedHandler(l.Handler()))
}

// BoundedHandler wraps h so that no string it writes is longer than
// MaxLogValue bytes: longer ones keep their start and say how long they
// were. Errors and Stringers are bounded by their text; groups, the
// logger's own attributes (With) and the message too.
func BoundedHandler(h slog.Handler) slog.Handler {
	if b, ok := h.(boundedHandler); ok {
		return b
	}
	return boundedHandler{inner: h}
}

type boundedHandler struct{ inner slog.Handler }

func (h boundedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h boundedHandler) Handle(ctx context.Context, r slog.Record) error {
	long := len(r.Message) > MaxLogValue
	r.Attrs(func(a slog.Attr) bool {
		long = long || tooLong(a.Value)
		return !long
	})
	if !long {
		return h.inner.Handle(ctx, r) // the usual case: nothing copied
	}
	bounded := slog.NewRecord(r.Time, r.Level, boundString(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		bounded.AddAttrs(boundAttr(a))
		return true
	})
	return h.inner.Handle(ctx, bounded)
}

func (h boundedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = boundAttr(a)
	}
	return boundedHandler{inner: h.inner.WithAttrs(out)}
}

func (h boundedHandler) WithGroup(name string) slog.Handler {
	return boundedHandler{inner: h.inner.WithGroup(boundString(name))}
}

// tooLong reports whether v holds a string over MaxLogValue, or a value
// whose text may be (an error, a Stringer, anything else formatted).
func tooLong(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString:
		return len(v.String()) > MaxLogValue
	case slog.KindGroup:
		for _, a := range v.Group() {
			if tooLong(a.Value) {
				return true
			}
		}
		return false
	case slog.KindAny, slog.KindLogValuer:
		return true
	}
	return false
}

func boundAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, boundString(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]any, len(group))
		for i, g := range group {
			out[i] = boundAttr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, boundString(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, boundString(x.String()))
		case []byte:
			return slog.String(a.Key, boundString(string(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func boundString(s string) string {
	if len(s) <= MaxLogValue {
		return s
	}
	cut := MaxLogValue
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s…(truncated, %d bytes)", s[:cut], len(s))
}

// LogThrottle lets one log line a key through per Every, and counts the
// ones it held back, so that a flood of the same failure (an attacker's
// keys, a client's bad retries) logs a line a minute with a count instead
// of one per request. It holds at most maxThrottleKeys keys: past that,
// keys whose window has passed are dropped, then all. The zero value
// throttles per minute.
type LogThrottle struct {
	// Every is the window; default a minute.
	Every time.Duration

	mu   sync.Mutex
	seen map[string]*throttled
}

type throttled struct {
	until time.Time
	held  int
}

const maxThrottleKeys = 10000

// Allow reports whether a line for key may be logged at now, and how many
// lines for it were held back since the last one let through.
func (t *LogThrottle) Allow(key string, now time.Time) (ok bool, held int) {
	every := t.Every
	if every <= 0 {
		every = time.Minute
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, found := t.seen[key]; found {
		if now.Before(e.until) {
			e.held++
			return false, 0
		}
		held = e.held
		e.until, e.held = now.Add(every), 0
		return true, held
	}
	if t.seen == nil {
		t.seen = map[string]*throttled{}
	}
	if len(t.seen) >= maxThrottleKeys {
		for k, e := range t.seen {
			if !now.Before(e.until) {
				delete(t.seen, k)
			}
		}
		if len(t.seen) >= maxThrottleKeys {
			clear(t.seen)
		}
	}
	t.seen[key] = &throttled{until: now.Add(every)}
	return true, 0
}
