package storage

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errDirectRefused is the error of a direct write whose alignment the
// device refuses.
var errDirectRefused = syscall.EINVAL

// directIO is false in tests of the buffered path (file systems that
// refuse O_DIRECT).
var directIO = true

// createDirect creates name exclusively, with O_DIRECT if the file system
// takes it (direct says whether it did).
func createDirect(name string) (f *os.File, direct bool, err error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if !directIO {
		f, err = os.OpenFile(name, flags, 0o666)
		return f, false, err
	}
	f, err = os.OpenFile(name, flags|syscall.O_DIRECT, 0o666)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, syscall.EINVAL) {
		return nil, false, err
	}
	f, err = os.OpenFile(name, flags, 0o666)
	return f, false, err
}

// clearDirect turns O_DIRECT off on f.
func clearDirect(f *os.File) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = c.Control(func(fd uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			_, ferr = unix.FcntlInt(fd, unix.F_SETFL, fl&^unix.O_DIRECT)
		}
	})
	if err == nil {
		err = ferr
	}
	return err
}

// openDirect opens name for reading, with O_DIRECT if the file system
// takes it.
func openDirect(name string) (f *os.File, direct bool, err error) {
	if !directIO {
		f, err = os.Open(name)
		return f, false, err
	}
	f, err = os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, syscall.EINVAL) {
		return nil, false, err
	}
	f, err = os.Open(name)
	return f, false, err
}

// pread is one pread(2) of f at off, retried on EINTR (os.File.ReadAt
// goes on after a short read at an offset O_DIRECT refuses).
func pread(f *os.File, p []byte, off int64) (int, error) {
	c, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	err = c.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Pread(int(fd), p, off)
			if rerr != unix.EINTR {
				return true
			}
		}
	})
	if err == nil {
		err = rerr
	}
	return max(n, 0), err
}
