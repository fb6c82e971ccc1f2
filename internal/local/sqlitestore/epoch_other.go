//go:build !unix

package sqlitestore

import "os"

// epochFile reads the epoch file anew on every authentication.
type epochFile struct{ path string }

func newEpochFile(path string) *epochFile { return &epochFile{path: path} }

// read is the epoch; "" when it cannot be read.
func (e *epochFile) read() string {
	raw, err := os.ReadFile(e.path)
	if err != nil {
		return ""
	}
	return string(raw)
}

func (e *epochFile) close() error { return nil }
