package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/weirhq/weir/internal/testseed"
)

// TestFileWriterBytes writes objects of sizes around the block and buffer
// boundaries, in one write, in random pieces and in aligned whole blocks
// (the path that skips the copy), and reads each back: the file must hold
// exactly the bytes written, whatever mix of direct and buffered writes
// made it. Where the directory's file system takes O_DIRECT, the writer
// must have used it up to the last partial block.
func TestFileWriterBytes(t *testing.T) { forEachIOMode(t, testFileWriterBytes) }

// forEachIOMode runs test with direct I/O where the file system takes it,
// and with buffered I/O (as on file systems that refuse O_DIRECT).
func forEachIOMode(t *testing.T, test func(t *testing.T)) {
	t.Run("direct", test)
	t.Run("buffered", func(t *testing.T) {
		directIO = false
		defer func() { directIO = true }()
		test(t)
	})
}

func testFileWriterBytes(t *testing.T) {
	dir := t.TempDir()
	probe, canDirect, err := openDirect(filepath.Join(dir, "probe"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	t.Logf("O_DIRECT on %s: %v", dir, canDirect)
	r := testseed.Rand(t, 1)
	// An aligned source, so that whole-block writes can skip the buffer.
	src := alignedBuffer(3*fileWriteBuffer + 20000)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	if uintptr(unsafe.Pointer(&src[0]))%directBlock != 0 {
		t.Fatal("alignedBuffer gave an unaligned buffer")
	}
	sizes := []int{0, 1, directBlock - 1, directBlock, directBlock + 1, fileWriteBuffer - 1, fileWriteBuffer,
		fileWriteBuffer + 1, 3*fileWriteBuffer + 12345, r.IntN(len(src))}
	for _, size := range sizes {
		for _, mode := range []string{"whole", "random", "blocks"} {
			path := filepath.Join(dir, "obj")
			w, err := newFileWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			if w.direct != canDirect {
				t.Fatalf("writer direct = %v, the file system takes O_DIRECT: %v", w.direct, canDirect)
			}
			data := src[:size]
			for p := data; len(p) > 0; {
				n := len(p)
				switch mode {
				case "random":
					n = min(n, 1+r.IntN(3*directBlock))
				case "blocks":
					n = min(n, directBlock*(1+r.IntN(300)))
				}
				if k, err := w.Write(p[:n]); err != nil || k != n {
					t.Fatalf("size %d %s: Write = %d, %v", size, mode, k, err)
				}
				p = p[n:]
			}
			if err := w.wait(); err != nil { // direct is the background write's until then
				t.Fatalf("size %d %s: %v", size, mode, err)
			}
			if canDirect && !w.direct {
				t.Fatalf("size %d %s: direct I/O turned off before Close", size, mode)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("size %d %s: Close: %v", size, mode, err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("size %d %s: read back %d bytes (%v), want the %d written", size, mode, len(got), err, size)
			}
			if m, _ := filepath.Glob(path + ".*.tmp"); len(m) != 0 {
				t.Fatalf("size %d %s: temporary files left: %q", size, mode, m)
			}
		}
	}
}

// TestFileWriterAbort leaves neither the object nor its temporary file, and
// keeps an object already at the path.
func TestFileWriterAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "obj")
	if err := os.WriteFile(path, []byte("old"), 0o666); err != nil {
		t.Fatal(err)
	}
	w, err := newFileWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte{7}, fileWriteBuffer+5))
	w.abort()
	if got, err := os.ReadFile(path); err != nil || string(got) != "old" {
		t.Fatalf("after abort the object is %q (%v), want the old one", got, err)
	}
	if m, _ := filepath.Glob(path + ".*.tmp"); len(m) != 0 {
		t.Fatalf("abort left %q", m)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("Write after abort succeeded")
	}
}

// TestFileWriterFailsBehind: a write that fails in the background (here
// on a file closed under the writer) fails a later Write or Close, and
// nothing is published.
func TestFileWriterFailsBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "obj")
	w, err := newFileWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	w.f.Close()
	chunk := make([]byte, 32<<10)
	var werr error
	for i := 0; i < 3*fileWriteBuffer/len(chunk) && werr == nil; i++ {
		_, werr = w.Write(chunk)
	}
	if werr == nil {
		t.Fatal("3 MiB written to a closed file without an error")
	}
	if _, err := w.Write(chunk); err == nil {
		t.Fatal("Write after a failed write succeeded")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed write succeeded")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a failed write published the object: %v", err)
	}
	if m, _ := filepath.Glob(path + ".*.tmp"); len(m) != 0 {
		t.Fatalf("a failed write left %q", m)
	}
}

// TestFileReaderRanges reads random ranges of files of sizes around the
// block and window boundaries, sequential runs (as a restore reads) and
// jumps, and ranges past the end: each must give the file's bytes, and
// io.EOF exactly when the range passes the end.
func TestFileReaderRanges(t *testing.T) { forEachIOMode(t, testFileReaderRanges) }

func testFileReaderRanges(t *testing.T) {
	dir := t.TempDir()
	r := testseed.Rand(t, 2)
	for _, size := range []int{1, directBlock - 1, directBlock, directBlock + 1, fileWriteBuffer, 2*fileWriteBuffer + 777, r.IntN(3 * fileWriteBuffer)} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		path := filepath.Join(dir, "obj")
		if err := os.WriteFile(path, data, 0o666); err != nil {
			t.Fatal(err)
		}
		fr, got, err := openFileReader(path)
		if err != nil || got != int64(size) {
			t.Fatalf("openFileReader: size %d, %v, want %d", got, err, size)
		}
		off := 0
		for range 200 {
			if r.IntN(4) == 0 {
				off = r.IntN(size + 10) // a jump, sometimes past the end
			}
			n := r.IntN(3 * directBlock)
			if r.IntN(10) == 0 {
				n = r.IntN(2 * fileWriteBuffer)
			}
			p := make([]byte, n)
			m, err := fr.ReadAt(p, int64(off))
			want := max(0, min(n, size-off))
			if m != want || !bytes.Equal(p[:m], data[min(off, size):min(off, size)+want]) {
				t.Fatalf("size %d: ReadAt(%d bytes, %d) = %d bytes (%v), want %d of the file's", size, n, off, m, err, want)
			}
			if (err != nil) != (want < n) {
				t.Fatalf("size %d: ReadAt(%d bytes, %d) error %v, want io.EOF only past the end", size, n, off, err)
			}
			off += m
		}
		if err := fr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
