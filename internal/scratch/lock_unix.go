//go:build unix

package scratch

import (
	"errors"
	"os"
	"syscall"
)

// lock opens (creating when create) and locks path without waiting.
func lock(path string, create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("locked by a live process")
		}
		return nil, err
	}
	return f, nil
}
