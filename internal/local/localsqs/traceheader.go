package localsqs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The lineage as Lambda carries it between processes: in the X-Ray trace
// header it hands each invocation (the Runtime API's
// Lambda-Runtime-Trace-Id, which aws-lambda-go puts in _X_AMZN_TRACE_ID),
// which the Go SDK sends with each request (X-Amzn-Trace-Id, its
// RecursionDetection middleware) and SQS keeps as the message's
// AWSTraceHeader system attribute. Lambda's Lineage field is not
// documented; the form here is the one seen in the wild (OpenTelemetry's
// X-Ray propagator test: "Lineage=a87bd80c:1|68fd508a:5"): one
// <function key>:<invocations> entry per function, joined by '|', where a
// function's key is FunctionKey of its name.

// FunctionKey is a function's key in a trace header's Lineage: the first
// 8 hex digits of the SHA-256 of its name (Counts of a Lineage read from a
// header are keyed by it).
func FunctionKey(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:4])
}

// NewTraceRoot is a new X-Ray trace id (Root=1-<epoch hex>-<24 hex>), for
// a chain that starts at now.
func NewTraceRoot(now time.Time) string {
	var b [12]byte
	rand.Read(b[:])
	return fmt.Sprintf("1-%08x-%s", now.Unix(), hex.EncodeToString(b[:]))
}

// TraceHeader is l as an X-Ray trace header for one invocation: its root,
// a new parent segment id, not sampled, and its lineage when it has one.
func (l Lineage) TraceHeader() string {
	var parent [8]byte
	rand.Read(parent[:])
	h := "Root=" + l.Trace + ";Parent=" + hex.EncodeToString(parent[:]) + ";Sampled=0"
	if len(l.Counts) == 0 {
		return h
	}
	entries := make([]string, 0, len(l.Counts))
	for _, key := range slices.Sorted(maps.Keys(l.Counts)) {
		entries = append(entries, key+":"+strconv.Itoa(l.Counts[key]))
	}
	return h + ";Lineage=" + strings.Join(entries, "|")
}

// ParseTraceHeader reads the root and the lineage of an X-Ray trace
// header (percent-encoded or not: the SDK encodes the '|' it sends); false
// when it has no Root. An entry it cannot read is left out.
func ParseTraceHeader(h string) (Lineage, bool) {
	if u, err := url.PathUnescape(h); err == nil {
		h = u
	}
	var l Lineage
	for _, field := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch k {
		case "Root":
			l.Trace = v
		case "Lineage":
			for _, entry := range strings.Split(v, "|") {
				key, n, ok := strings.Cut(entry, ":")
				count, err := strconv.Atoi(n)
				if !ok || err != nil || key == "" || count < 0 {
					continue
				}
				if l.Counts == nil {
					l.Counts = map[string]int{}
				}
				l.Counts[key] = count
			}
		}
	}
	return l, l.Trace != ""
}
