package storage

import (
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

// openDirect opens name with flags, then turns O_DIRECT on if the file
// system takes it (direct says whether it did). Not O_DIRECT in the open
// itself: a file system that refuses it fails that open with EINVAL after
// O_CREAT has made the file, and an O_EXCL retry would then find it there.
func openDirect(name string, flags int, perm os.FileMode) (f *os.File, direct bool, err error) {
	f, err = os.OpenFile(name, flags, perm)
	if err != nil {
		return nil, false, err
	}
	return f, directIO && setDirect(f, true) == nil, nil
}

// clearDirect turns O_DIRECT off on f.
func clearDirect(f *os.File) error { return setDirect(f, false) }

// setDirect turns O_DIRECT on or off on f (F_SETFL: EINVAL where the file
// system has no direct I/O).
func setDirect(f *os.File, on bool) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = c.Control(func(fd uintptr) {
		var fl int
		if fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			fl &^= unix.O_DIRECT
			if on {
				fl |= unix.O_DIRECT
			}
			_, ferr = unix.FcntlInt(fd, unix.F_SETFL, fl)
		}
	})
	if err == nil {
		err = ferr
	}
	return err
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
