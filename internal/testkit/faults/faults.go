// Package faults wraps the service's adapters (store, queue, upstream,
// bucket, workflow) so a test can make any named call fail, or "crash" the
// caller just before the call or just after it succeeded but before the
// caller saw its answer. Tests then recover as production would (SQS
// redelivery, the sweeper, a workflow retry) and check that no credit or
// record was lost or duplicated. Only tests use it.
package faults

import (
	"errors"
	"fmt"
	"sync"
)

// Mode is what an armed fault does to its call.
type Mode int

const (
	// FailBefore skips the call and returns ErrInjected.
	FailBefore Mode = iota + 1
	// CrashBefore panics with a Crash before the call: the process died.
	CrashBefore
	// CrashAfter makes the call and, when it succeeded, panics with a Crash:
	// the work was done but its caller never learned of it.
	CrashAfter
	// FailAfter makes the call and, when it succeeded, returns ErrInjected
	// (a timeout on an answer that was lost).
	FailAfter
)

// Modes lists every mode, for tables.
var Modes = []Mode{FailBefore, CrashBefore, CrashAfter, FailAfter}

func (m Mode) String() string {
	switch m {
	case FailBefore:
		return "fail-before"
	case CrashBefore:
		return "crash-before"
	case CrashAfter:
		return "crash-after"
	case FailAfter:
		return "fail-after"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ErrInjected is the error of an injected failure.
var errInjected = errors.New("injected fault")

// Crash is the panic value of a simulated crash.
type crash struct {
	Point Point
	Mode  Mode
}

// Point names one call: the phase the test is in, the operation
// ("store.Hold", "queue.Send", "upstream.Get", "bucket.Put", ...) and which
// call of it in that phase (1-based).
type Point struct {
	Phase string
	Op    string
	Nth   int
}

func (p Point) String() string { return fmt.Sprintf("%s/%s#%d", p.Phase, p.Op, p.Nth) }

// Injector counts calls and fires the armed faults.
type Injector struct {
	mu     sync.Mutex
	phase  string
	counts map[string]int
	armed  map[Point]Mode
	fired  []Point
	trace  []Point
	// settled counts, per work id, the settlements that took effect; held
	// lists the work ids of the holds made.
	settled map[string]int
	held    []string
}

// New makes an injector with nothing armed.
func New() *Injector {
	return &Injector{counts: map[string]int{}, armed: map[Point]Mode{}, settled: map[string]int{}}
}

// Phase names the phase that following calls belong to.
func (in *Injector) Phase(name string) {
	in.mu.Lock()
	in.phase = name
	in.mu.Unlock()
}

// Arm makes the call at p fail or crash in mode m, once.
func (in *Injector) Arm(p Point, m Mode) {
	in.mu.Lock()
	in.armed[p] = m
	in.mu.Unlock()
}

// Fired lists the faults that went off.
func (in *Injector) Fired() []Point {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Point(nil), in.fired...)
}

// Trace lists every call made, in order: the crash points of a run.
func (in *Injector) Trace() []Point {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Point(nil), in.trace...)
}

// Settled reports how many settlements of each work id took effect.
func (in *Injector) Settled() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int, len(in.settled))
	for k, v := range in.settled {
		out[k] = v
	}
	return out
}

// Held lists the work ids of the holds that were made.
func (in *Injector) Held() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.held...)
}

func (in *Injector) noteHeld(workID string) {
	in.mu.Lock()
	in.held = append(in.held, workID)
	in.mu.Unlock()
}

func (in *Injector) noteSettled(workID string) {
	in.mu.Lock()
	in.settled[workID]++
	in.mu.Unlock()
}

// hit counts a call of op and returns the mode armed for it, if any.
func (in *Injector) hit(op string) (Point, Mode) {
	in.mu.Lock()
	defer in.mu.Unlock()
	key := in.phase + "\x00" + op
	in.counts[key]++
	p := Point{Phase: in.phase, Op: op, Nth: in.counts[key]}
	in.trace = append(in.trace, p)
	m, ok := in.armed[p]
	if ok {
		delete(in.armed, p)
		in.fired = append(in.fired, p)
	}
	return p, m
}

// call runs fn under the fault armed for op, if any.
func call[T any](in *Injector, op string, fn func() (T, error)) (T, error) {
	var zero T
	p, m := in.hit(op)
	switch m {
	case FailBefore:
		return zero, fmt.Errorf("%s: %w", p, errInjected)
	case CrashBefore:
		panic(crash{Point: p, Mode: m})
	}
	v, err := fn()
	if err == nil {
		switch m {
		case CrashAfter:
			panic(crash{Point: p, Mode: m})
		case FailAfter:
			return zero, fmt.Errorf("%s: %w", p, errInjected)
		}
	}
	return v, err
}

func call0(in *Injector, op string, fn func() error) error {
	_, err := call(in, op, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// Run calls fn and reports a simulated crash as crashed; any other panic
// goes on.
func Run(fn func() error) (crashed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	return false, fn()
}

// Points lists the distinct points of a trace in the phases named, in order.
func Points(trace []Point, phases ...string) []Point {
	want := map[string]bool{}
	for _, p := range phases {
		want[p] = true
	}
	var out []Point
	for _, p := range trace {
		if len(phases) == 0 || want[p.Phase] {
			out = append(out, p)
		}
	}
	return out
}

// FirstOfEachOp keeps the first point of each phase and operation.
func FirstOfEachOp(points []Point) []Point {
	seen := map[[2]string]bool{}
	var out []Point
	for _, p := range points {
		k := [2]string{p.Phase, p.Op}
		if !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}
