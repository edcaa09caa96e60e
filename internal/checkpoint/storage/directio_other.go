//go:build !linux

package storage

import (
	"errors"
	"os"
)

// errDirectRefused is never returned: without Linux's O_DIRECT, writes
// are buffered.
var errDirectRefused = errors.New("direct I/O refused")

// directIO has no effect: direct I/O is Linux only.
var directIO = true

// openDirect opens name with flags; direct I/O is Linux only.
func openDirect(name string, flags int, perm os.FileMode) (*os.File, bool, error) {
	f, err := os.OpenFile(name, flags, perm)
	return f, false, err
}

func clearDirect(*os.File) error { return nil }

func pread(f *os.File, p []byte, off int64) (int, error) { return f.ReadAt(p, off) }
