package lambdastack

import (
	"net/http"
	"sync"
)

// stall holds a caller's next calls until it is released.
type stall struct {
	left    int
	release chan struct{}
}

// Stall holds the next n calls that caller (a function's logical ID)
// makes to the AWS endpoint until release is called, as a service that
// does not answer would: a held call goes on once released, or ends when
// its caller gives up on it (its process killed at its timeout, its
// client's deadline). A test holds a function in a call for as long as it
// needs it there, and releases it (also in t.Cleanup) when done; release
// also drops the calls left unheld, so nothing carries over to the next
// test. A later Stall of the same caller replaces this one's count.
func (m *Moto) Stall(caller string, n int) (release func()) {
	st := &stall{left: n, release: make(chan struct{})}
	m.mu.Lock()
	if m.stalls == nil {
		m.stalls = map[string]*stall{}
	}
	m.stalls[caller] = st
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			if m.stalls[caller] == st {
				delete(m.stalls, caller)
			}
			m.mu.Unlock()
			close(st.release)
		})
	}
}

// stall holds r if its caller is stalled.
func (m *Moto) stall(r *http.Request) {
	m.mu.Lock()
	var release chan struct{}
	if k := credentialKey.FindStringSubmatch(r.Header.Get("Authorization")); k != nil {
		if st := m.stalls[m.callers[k[1]]]; st != nil && st.left > 0 {
			st.left--
			release = st.release
		}
	}
	m.mu.Unlock()
	if release == nil {
		return
	}
	select {
	case <-release:
	case <-r.Context().Done():
	}
}
