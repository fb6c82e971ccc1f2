package lambdastack

import (
	"net/http"
	"time"
)

// stall holds a caller's next calls.
type stall struct {
	d    time.Duration
	left int
}

// Stall holds the next n calls that caller (a function's logical ID)
// makes to the AWS endpoint for d each before they go on, as a slow
// network or service would: a test makes a function outlast its timeout
// with it.
func (m *Moto) Stall(caller string, d time.Duration, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stalls == nil {
		m.stalls = map[string]*stall{}
	}
	m.stalls[caller] = &stall{d: d, left: n}
}

// stall holds r if its caller is stalled.
func (m *Moto) stall(r *http.Request) {
	m.mu.Lock()
	var d time.Duration
	if k := credentialKey.FindStringSubmatch(r.Header.Get("Authorization")); k != nil {
		if st := m.stalls[m.callers[k[1]]]; st != nil && st.left > 0 {
			st.left--
			d = st.d
		}
	}
	m.mu.Unlock()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}
