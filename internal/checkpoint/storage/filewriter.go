package storage

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// A file store writes streamed objects (snapshots, SSTs) itself rather than
// through fileblob, to write them with direct I/O where the file system
// allows it: a checkpoint's files are written once and read only by a
// restore, so passing them through the page cache only costs. On the
// machines Weir is measured on, a buffered write of 1.7 GB (one checkpoint
// of Nexmark's q20) took 4.2 s of system CPU in the writing process (the
// kernel allocating and copying page-cache pages) and the same write with
// O_DIRECT 0.14 s; the job's throughput per core is what a checkpoint
// costs it.
//
// Direct I/O needs the buffer's address, the length and the file offset
// aligned to the device's logical block: whole blocks go out from an
// aligned buffer, and the last partial block after clearing O_DIRECT
// (Linux toggles it with F_SETFL, which also turns it on after the open).
// A file system that refuses O_DIRECT (F_SETFL fails), or a direct write
// refused with EINVAL (a stricter alignment), falls back to buffered
// writes; the bytes are the same.
// Atomicity is fileblob's: a temporary "<name>.<hex nanos>.tmp" beside the
// target, renamed into place on Close (then persist fsyncs it).

// directBlock is the alignment of direct writes: the largest logical block
// size of common devices, so it suits 512-byte ones too.
const directBlock = 4096

// fileWriteBuffer is the bytes a streaming file write holds before writing
// them: one aligned buffer per open writer (one per subtask writing a
// snapshot), reused across writers.
const fileWriteBuffer = 1 << 20

// fileBuffers holds aligned buffers of fileWriteBuffer bytes.
var fileBuffers = sync.Pool{New: func() any {
	b := alignedBuffer(fileWriteBuffer)
	return &b
}}

// alignedBuffer returns n bytes starting at a multiple of directBlock.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+directBlock)
	skip := (directBlock - int(uintptr(unsafe.Pointer(&b[0]))%directBlock)) % directBlock
	return b[skip:][:n:n]
}

// fileWriter writes one object of a file store to a temporary file.
type fileWriter struct {
	f      *os.File
	path   string  // the target
	buf    *[]byte // from fileBuffers; nil once released
	n      int     // bytes of *buf pending
	direct bool    // f is open with O_DIRECT
}

// newFileWriter creates the temporary file of path (whose directory must
// exist), with direct I/O if the file system takes it.
func newFileWriter(path string) (*fileWriter, error) {
	for try := 0; ; try++ {
		name := path + "." + strconv.FormatInt(time.Now().UnixNano(), 16) + ".tmp"
		f, direct, err := openDirect(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if os.IsExist(err) && try < 10000 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &fileWriter{f: f, path: path, buf: fileBuffers.Get().(*[]byte), direct: direct}, nil
	}
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.buf == nil {
		return 0, errors.New("write after Close")
	}
	total := len(p)
	buf := *w.buf
	for len(p) > 0 {
		// Whole aligned blocks of an aligned p go out without a copy (the
		// snapshot writer's bufio flushes are large page-aligned buffers).
		if w.n == 0 && w.direct && len(p) >= directBlock && uintptr(unsafe.Pointer(&p[0]))%directBlock == 0 {
			k := len(p) &^ (directBlock - 1)
			if err := w.write(p[:k]); err != nil {
				return total - len(p), err
			}
			p = p[k:]
			continue
		}
		c := copy(buf[w.n:], p)
		w.n += c
		p = p[c:]
		if w.n == len(buf) {
			if err := w.write(buf); err != nil {
				return total - len(p), err
			}
			w.n = 0
		}
	}
	return total, nil
}

// write writes p, a whole number of blocks when direct.
func (w *fileWriter) write(p []byte) error {
	n, err := w.f.Write(p)
	if err != nil && w.direct && errors.Is(err, errDirectRefused) {
		// The device wants a stricter alignment: go on buffered, from
		// where the direct writes stopped.
		if err = w.buffered(); err == nil {
			_, err = w.f.Write(p[n:])
		}
	}
	return err
}

// buffered turns direct I/O off for the rest of the file.
func (w *fileWriter) buffered() error {
	if !w.direct {
		return nil
	}
	w.direct = false
	return clearDirect(w.f)
}

// Close writes what is pending and renames the file into place.
func (w *fileWriter) Close() error {
	if w.buf == nil {
		return errors.New("closed twice")
	}
	err := w.flush()
	w.release()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.f.Name(), w.path)
	}
	if err != nil {
		_ = os.Remove(w.f.Name())
	}
	return err
}

// flush writes the pending bytes: the whole blocks directly, the last
// partial one buffered.
func (w *fileWriter) flush() error {
	buf := (*w.buf)[:w.n]
	if w.direct {
		k := len(buf) &^ (directBlock - 1)
		if err := w.write(buf[:k]); err != nil {
			return err
		}
		buf = buf[k:]
		if len(buf) > 0 {
			if err := w.buffered(); err != nil {
				return err
			}
		}
	}
	if len(buf) > 0 {
		if _, err := w.f.Write(buf); err != nil {
			return err
		}
	}
	w.n = 0
	return nil
}

// abort closes and removes the temporary file: nothing is published.
func (w *fileWriter) abort() {
	if w.buf == nil {
		return
	}
	w.release()
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

func (w *fileWriter) release() {
	fileBuffers.Put(w.buf)
	w.buf = nil
}
