//go:build unix

package sqlitestore

import (
	"os"
	"sync/atomic"
	"syscall"
)

// epochFile reads the epoch file, on every authentication. It keeps the
// file open and reads it in place (fstat and pread: two system calls,
// where opening, reading and closing it were three and a path lookup,
// about half as fast). A bump replaces the file by a rename, which leaves
// the open one with no link: then the path is opened again.
type epochFile struct {
	path string
	f    atomic.Pointer[os.File]
}

func newEpochFile(path string) *epochFile { return &epochFile{path: path} }

// read is the epoch; "" when it cannot be read.
func (e *epochFile) read() string {
	// A few tries: the file may be replaced, or closed by another reader
	// that saw it replaced, between the steps.
	for range 4 {
		f := e.f.Load()
		if f == nil {
			opened, err := os.Open(e.path)
			if err != nil {
				return ""
			}
			if !e.f.CompareAndSwap(nil, opened) {
				opened.Close()
				continue
			}
			f = opened
		}
		fi, err := f.Stat()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
			// Replaced (or removed) since it was opened.
			if e.f.CompareAndSwap(f, nil) {
				f.Close()
			}
			continue
		}
		var buf [64]byte // an epoch is 32 bytes
		n, err := f.ReadAt(buf[:], 0)
		if n == len(buf) || err != nil && n == 0 {
			// Not one of ours, or closed under us: read it whole, by path.
			if raw, err := os.ReadFile(e.path); err == nil && len(raw) > 0 {
				return string(raw)
			}
			continue
		}
		return string(buf[:n])
	}
	return ""
}

func (e *epochFile) close() error {
	if f := e.f.Swap(nil); f != nil {
		return f.Close()
	}
	return nil
}
