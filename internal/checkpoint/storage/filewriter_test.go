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
func TestFileWriterBytes(t *testing.T) {
	dir := t.TempDir()
	probe, canDirect, err := createDirect(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	t.Logf("O_DIRECT on %s: %v", dir, canDirect)
	r := testseed.Rand(t, 1)
	// An aligned source, so that whole-block writes can skip the buffer.
	src := (*fileBuffers.Get().(*[]byte))[:0]
	for len(src) < 3*fileWriteBuffer+20000 {
		src = append(src, byte(r.Uint32()))
	}
	if uintptr(unsafe.Pointer(&src[0]))%directBlock != 0 {
		t.Fatal("fileBuffers gave an unaligned buffer")
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
