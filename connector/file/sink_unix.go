//go:build unix

package file

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// writable reports why files cannot be created in the directory dir, if
// they cannot.
func writable(dir string) error {
	const wOK, xOK = 2, 1 // access(2) modes
	return syscall.Access(dir, wOK|xOK)
}

// openDirect opens a FIFO or device for writing. A FIFO has no writer until
// it has a reader; rather than wait in open(2), where nothing can interrupt
// it, it waits here until a reader comes or cancel is closed.
func openDirect(path string, cancel <-chan struct{}) (*os.File, error) {
	if st, err := os.Stat(path); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return os.OpenFile(path, os.O_WRONLY, 0)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		// Opened non-blocking, the FIFO is written through Go's poller.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.ENXIO) { // ENXIO: no reader yet
			return f, err
		}
		select {
		case <-cancel:
			return nil, errors.New("canceled while waiting for a reader of the FIFO")
		case <-tick.C:
		}
	}
}

// syncDir makes the entries of directory dir (files created, renamed or
// removed in it) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
