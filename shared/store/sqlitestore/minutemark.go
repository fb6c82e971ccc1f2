package sqlitestore

import "sync/atomic"

// minuteMark remembers the last minute window in which a chore ran, so that
// it runs once per window however many requests come.
type minuteMark struct{ last atomic.Int64 }

// claim reports whether window (Unix seconds) is later than the last one
// claimed, and claims it; undo gives it back when the chore failed.
func (m *minuteMark) claim(window int64) (undo func(), ok bool) {
	last := m.last.Load()
	if window <= last || !m.last.CompareAndSwap(last, window) {
		return nil, false
	}
	return func() { m.last.CompareAndSwap(window, last) }, true
}
