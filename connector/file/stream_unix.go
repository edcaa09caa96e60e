//go:build unix

package file

import (
	"io/fs"
	"os"
	"syscall"
)

// wakeFIFOOpen ends an open for reading of the FIFO at path that waits for a
// writer, by opening it for writing without waiting and closing it again.
func wakeFIFOOpen(path string) {
	if st, err := os.Stat(path); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
