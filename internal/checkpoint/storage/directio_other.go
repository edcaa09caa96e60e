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

// createDirect creates name exclusively; direct I/O is Linux only.
func createDirect(name string) (*os.File, bool, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	return f, false, err
}

func clearDirect(*os.File) error { return nil }

// openDirect opens name for reading; direct I/O is Linux only.
func openDirect(name string) (*os.File, bool, error) {
	f, err := os.Open(name)
	return f, false, err
}

func pread(f *os.File, p []byte, off int64) (int, error) { return f.ReadAt(p, off) }
