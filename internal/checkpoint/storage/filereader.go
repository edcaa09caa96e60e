package storage

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
)

// fileReader reads an object of a file store with direct I/O where the
// file system takes it, through an aligned window of fileWriteBuffer
// bytes: a restore reads its snapshot chunk after chunk, and a snapshot
// written with direct I/O is not in the page cache, so buffered reads
// would make the kernel fill page-cache pages first, the cost the writes
// avoid. Direct reads
// get no readahead from the kernel, so when a read continues where the
// window ends, the window after it is read ahead in the background into
// a second buffer while the caller works through this one.
type fileReader struct {
	f *os.File

	mu     sync.Mutex // guards what follows: ReadAt may be called concurrently
	direct bool       // f is open with O_DIRECT: reads go through win
	win    *[]byte    // from fileBuffers; nil once closed
	wOff   int64      // file offset of (*win)[0]
	wLen   int        // bytes of *win read

	ahead *readAhead // the window being read after win, or nil
}

// readAhead is a window read in the background: done is closed when buf
// holds n bytes from off, or err.
type readAhead struct {
	buf  *[]byte
	off  int64
	n    int
	err  error
	done chan struct{}
}

// openFileReader opens the file at path and says how long it is. A
// directory is not an object: fs.ErrNotExist.
func openFileReader(path string) (*fileReader, int64, error) {
	f, direct, err := openDirect(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	info, err := f.Stat()
	if err == nil && info.IsDir() {
		err = &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	r := &fileReader{f: f, direct: direct}
	if direct {
		r.win = fileBuffers.Get().(*[]byte)
	}
	return r, info.Size(), nil
}

// ReadAt reads len(p) bytes at off, or fewer and io.EOF at the end.
func (r *fileReader) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.direct {
		return r.f.ReadAt(p, off)
	}
	n := 0
	for n < len(p) {
		o := off + int64(n)
		if o >= r.wOff && o < r.wOff+int64(r.wLen) {
			n += copy(p[n:], (*r.win)[o-r.wOff:r.wLen])
			continue
		}
		if err := r.fill(o &^ (directBlock - 1)); err != nil {
			if errors.Is(err, errDirectRefused) {
				// A stricter alignment than directBlock: read buffered.
				r.direct = false
				if err = clearDirect(r.f); err == nil {
					m, err := r.f.ReadAt(p[n:], o)
					return n + m, err
				}
			}
			return n, err
		}
		if o >= r.wOff+int64(r.wLen) {
			return n, io.EOF
		}
	}
	return n, nil
}

// fill makes the window the one at start, a multiple of directBlock: the
// window read ahead if it is that one, else read now; then, if the window
// is full, the one after it is read ahead.
func (r *fileReader) fill(start int64) error {
	var spare *[]byte
	if a := r.ahead; a != nil {
		<-a.done
		r.ahead = nil
		if a.off == start && a.err == nil {
			r.win, a.buf = a.buf, r.win
			r.wOff, r.wLen = start, a.n
			r.startAhead(a.buf)
			return nil
		}
		spare = a.buf
	} else {
		spare = fileBuffers.Get().(*[]byte)
	}
	n, err := readWindow(r.f, *r.win, start)
	r.wOff, r.wLen = start, n
	if err != nil {
		fileBuffers.Put(spare)
		return err
	}
	r.startAhead(spare)
	return nil
}

// startAhead reads the window after the current one into buf, if the
// current one is full (else the file ends in it: buf goes back).
func (r *fileReader) startAhead(buf *[]byte) {
	if r.wLen < len(*r.win) {
		fileBuffers.Put(buf)
		return
	}
	a := &readAhead{buf: buf, off: r.wOff + int64(r.wLen), done: make(chan struct{})}
	r.ahead = a
	go func() {
		a.n, a.err = readWindow(r.f, *a.buf, a.off)
		close(a.done)
	}()
}

// readWindow reads win at start, a multiple of directBlock: whole blocks
// until win is full or the file ends (a short read of a partial block).
func readWindow(f *os.File, win []byte, start int64) (int, error) {
	n := 0
	for n < len(win) {
		k, err := pread(f, win[n:], start+int64(n))
		if err != nil {
			return n, err
		}
		n += k
		if k == 0 || k%directBlock != 0 {
			break // the end of the file
		}
	}
	return n, nil
}

func (r *fileReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.ahead; a != nil {
		<-a.done
		fileBuffers.Put(a.buf)
		r.ahead = nil
	}
	if r.win != nil {
		fileBuffers.Put(r.win)
		r.win = nil
	}
	r.direct = false
	return r.f.Close()
}
