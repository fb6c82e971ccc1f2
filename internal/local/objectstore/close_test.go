package objectstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestCloseCutsTheConnectionsLeftAtItsDeadline: a connection that never
// sent a request (net/http's Shutdown waits 5 s for such a one) is cut
// once Close's context ends, and Close says the deadline passed.
func TestCloseCutsTheConnectionsLeftAtItsDeadline(t *testing.T) {
	s, err := Start(context.Background(), "127.0.0.1:0", t.TempDir(), "outputs")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the deadline's error", err)
	}
	// The server has closed its end: a read ends at once, not at the read
	// deadline (5 s: generous for a loaded machine, and shorter than the
	// server's own 10 s for a request's header, which would close it too).
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Errorf("the idle connection is still open after Close: read = %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
