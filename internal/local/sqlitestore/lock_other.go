//go:build !unix

package sqlitestore

import (
	"errors"
	"fmt"
	"os"
)

// lockFile: files are not locked here, so no store counts in memory.
func lockFile(f *os.File, _ bool) error {
	return fmt.Errorf("lock %s: %w", f.Name(), errors.ErrUnsupported)
}
