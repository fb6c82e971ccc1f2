//go:build unix

package sqlitestore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile locks f with flock, without waiting: a lock held by another
// open file (another process, or another store in this one) is
// ErrDataDirInUse.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), ErrDataDirInUse)
		default:
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
	}
}
