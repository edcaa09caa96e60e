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
// restore, so passing them through the page cache only costs: the kernel
// allocating and copying page-cache pages is system CPU of the writing
// process, taken from the job's throughput per core (docs/benchmarks.md,
// "Snapshot files bypass the page cache").
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
// them: two aligned buffers per open writer (one per subtask writing a
// snapshot), one filled while the other is written, reused across
// writers.
const fileWriteBuffer = 1 << 20

// zeroCopyMin is the smallest aligned piece a writer writes straight from
// the caller's buffer (the snapshot writer's bufio flushes, 256 KiB). Such
// a write waits for the device, as the caller may reuse its buffer when
// Write returns; smaller pieces (io.Copy's 32 KiB, from an upload of a
// Pebble file) are copied and written behind, so that small pieces never
// each wait for the device.
const zeroCopyMin = 256 << 10

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

// fileWriter writes one object of a file store to a temporary file. A full
// buffer is written in the background (write-behind) while the caller
// fills the other one, so that a direct write's wait for the device
// overlaps the work that produces the next megabyte.
type fileWriter struct {
	f    *os.File
	path string  // the target
	buf  *[]byte // being filled, from fileBuffers; nil once released
	n    int     // bytes of *buf pending

	// The write in flight, if any: flying is its buffer and done gets its
	// result. direct and f's offset belong to that write until wait
	// returns.
	flying *[]byte
	done   chan error
	spare  *[]byte // the other buffer when no write is in flight, or nil
	err    error   // the first failed write: every later call fails

	direct bool // f is open with O_DIRECT
}

// newFileWriter creates the temporary file of path (whose directory must
// exist), with direct I/O if the file system takes it.
func newFileWriter(path string) (*fileWriter, error) {
	var f *os.File
	var direct bool
	_, err := createTemp(path, func(name string) (err error) {
		f, direct, err = openDirect(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &fileWriter{f: f, path: path, buf: fileBuffers.Get().(*[]byte), done: make(chan error, 1), direct: direct}, nil
}

// createTemp calls create with a fresh temporary name beside path,
// "<name>.<hex nanos>.tmp" (fileblob's), until it does not fail because
// the name exists, and returns the name.
func createTemp(path string, create func(name string) error) (string, error) {
	for try := 0; ; try++ {
		name := path + "." + strconv.FormatInt(time.Now().UnixNano(), 16) + ".tmp"
		err := create(name)
		if os.IsExist(err) && try < 10000 {
			continue
		}
		return name, err
	}
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.buf == nil {
		return 0, errors.New("write after Close")
	}
	if w.err != nil {
		return 0, w.err
	}
	total := len(p)
	for len(p) > 0 {
		// Whole aligned blocks of a large aligned p go out without a copy.
		if w.n == 0 && len(p) >= zeroCopyMin && uintptr(unsafe.Pointer(&p[0]))%directBlock == 0 {
			if err := w.wait(); err != nil {
				return total - len(p), err
			}
			if w.direct {
				k := len(p) &^ (directBlock - 1)
				if err := w.fail(w.write(p[:k])); err != nil {
					return total - len(p), err
				}
				p = p[k:]
				continue
			}
		}
		c := copy((*w.buf)[w.n:], p)
		w.n += c
		p = p[c:]
		if w.n == len(*w.buf) {
			if err := w.writeBehind(); err != nil {
				return total - len(p), err
			}
		}
	}
	return total, nil
}

// writeBehind starts writing the full buffer in the background and gives
// the caller the other one.
func (w *fileWriter) writeBehind() error {
	if err := w.wait(); err != nil {
		return err
	}
	full := w.buf
	if w.spare == nil {
		w.spare = fileBuffers.Get().(*[]byte)
	}
	w.buf, w.spare, w.flying, w.n = w.spare, nil, full, 0
	go func() { w.done <- w.write(*full) }()
	return nil
}

// wait waits for the write in flight, if any, and returns the first error
// of any write.
func (w *fileWriter) wait() error {
	if w.flying != nil {
		err := <-w.done
		w.spare, w.flying = w.flying, nil
		w.fail(err)
	}
	return w.err
}

// fail records err, if the first, and returns it.
func (w *fileWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
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
	err := w.wait()
	if err == nil {
		err = w.flush()
	}
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

// flush writes the pending bytes, with no write in flight: the whole
// blocks directly, the last partial one buffered.
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
	w.wait()
	w.release()
	_ = w.f.Close()
	_ = os.Remove(w.f.Name())
}

// release returns the buffers, with no write in flight.
func (w *fileWriter) release() {
	fileBuffers.Put(w.buf)
	if w.spare != nil {
		fileBuffers.Put(w.spare)
	}
	w.buf, w.spare = nil, nil
}
