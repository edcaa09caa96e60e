package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/testseed"
)

func TestPutGetDelete(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		mustPut(t, s, "job/chk-1/a", []byte("hello"))
		mustPut(t, s, "job/chk-1/empty", nil)
		got, err := s.Get(ctx, "job/chk-1/a")
		if err != nil || string(got) != "hello" {
			t.Fatalf("Get = %q, %v", got, err)
		}
		if got, err := s.Get(ctx, "job/chk-1/empty"); err != nil || len(got) != 0 {
			t.Fatalf("Get empty = %q, %v", got, err)
		}
		mustPut(t, s, "job/chk-1/a", []byte("replaced"))
		if got, _ := s.Get(ctx, "job/chk-1/a"); string(got) != "replaced" {
			t.Fatalf("after overwrite Get = %q", got)
		}
		if err := s.Delete(ctx, "job/chk-1/a"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "job/chk-1/a"); err != nil {
			t.Fatalf("deleting a missing key: %v", err)
		}
		_, err = s.Get(ctx, "job/chk-1/a")
		if !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Get deleted = %v, want ErrNotFound", err)
		}
		if !strings.Contains(err.Error(), "job/chk-1/a") || !strings.Contains(err.Error(), s.URL()) {
			t.Errorf("error %q does not name the key and store", err)
		}
		if _, err := s.Open(ctx, "nothing/here"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Open missing = %v, want ErrNotFound", err)
		}
	})
}

func TestSameURLSameObjects(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		a, b := open(t, root), open(t, root)
		mustPut(t, a, "k", []byte("v"))
		if got, err := b.Get(context.Background(), "k"); err != nil || string(got) != "v" {
			t.Fatalf("second store Get = %q, %v", got, err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Get(context.Background(), "k"); !errors.Is(err, storage.ErrClosed) {
			t.Fatalf("Get after Close = %v, want ErrClosed", err)
		}
		if got, err := b.Get(context.Background(), "k"); err != nil || string(got) != "v" {
			t.Fatalf("after closing the first store, second Get = %q, %v", got, err)
		}
	})
}

func TestListOrderAndPrefix(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		s := open(t, root)
		r := testseed.Rand(t, 1)
		// (A file store cannot hold both "a/b" and "a/b/c": no key is a
		// "directory" of another.)
		want := []string{"a-b", "a/b/c", "a/b/d", "a/bc", "a0", "b/x/y/z", "job/chk-10/_metadata", "job/chk-2/_metadata", "job/shared/sst-1"}
		for _, i := range r.Perm(len(want)) {
			mustPut(t, s, want[i], []byte(want[i]))
		}
		if got := mustList(t, s, ""); !slices.Equal(got, want) {
			t.Errorf("List(\"\") = %q\nwant %q", got, want)
		}
		if got, w := mustList(t, s, "a/b"), []string{"a/b/c", "a/b/d", "a/bc"}; !slices.Equal(got, w) {
			t.Errorf("List(a/b) = %q, want %q", got, w)
		}
		if got, w := mustList(t, s, "a/b/"), []string{"a/b/c", "a/b/d"}; !slices.Equal(got, w) {
			t.Errorf("List(a/b/) = %q, want %q", got, w)
		}
		if got := mustList(t, s, "zzz"); len(got) != 0 {
			t.Errorf("List(zzz) = %q, want none", got)
		}
	})
}

func TestRootsAreIsolated(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		top := open(t, root)
		base, q, _ := strings.Cut(root, "?") // s3: the prefix goes before the query
		if q != "" {
			q = "?" + q
		}
		a, b := open(t, base+"/a"+q), open(t, base+"/b"+q)
		mustPut(t, a, "k", []byte("a"))
		mustPut(t, b, "k", []byte("b"))
		if got := mustList(t, a, ""); !slices.Equal(got, []string{"k"}) {
			t.Errorf("a lists %q", got)
		}
		if got := mustList(t, top, ""); !slices.Equal(got, []string{"a/k", "b/k"}) {
			t.Errorf("top lists %q", got)
		}
		if got, _ := top.Get(context.Background(), "b/k"); string(got) != "b" {
			t.Errorf("top Get b/k = %q", got)
		}
	})
}

func TestWriterStreamsAtomically(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		w, err := s.NewWriter(ctx, "job/chk-1/big")
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(data); off += 100_000 {
			if _, err := w.Write(data[off:min(off+100_000, len(data))]); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "job/chk-1/big"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("object visible before Close: %v", err)
			}
		}
		if got := mustList(t, s, ""); len(got) != 0 {
			t.Fatalf("List before Close = %q", got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "job/chk-1/big")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get after Close: %d bytes, %v", len(got), err)
		}
		if err := w.Close(); err == nil {
			t.Errorf("second Close succeeded")
		}
	})
}

func TestCanceledWriterLeavesNothing(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		s := open(t, root)
		mustPut(t, s, "kept", []byte("old"))
		for _, key := range []string{"new", "kept"} {
			ctx, cancel := context.WithCancel(context.Background())
			w, err := s.NewWriter(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(bytes.Repeat([]byte{1}, 100_000))
			cancel()
			w.Write([]byte("more"))
			if err := w.Close(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Close after cancel = %v, want context.Canceled", err)
			}
		}
		if got := mustList(t, s, ""); !slices.Equal(got, []string{"kept"}) {
			t.Fatalf("after canceled writes List = %q, want [kept]", got)
		}
		if got, _ := s.Get(context.Background(), "kept"); string(got) != "old" {
			t.Fatalf("canceled overwrite changed the object to %q", got)
		}
		assertNoStrayFiles(t, root)
	})
}

// assertNoStrayFiles checks that a file root holds no temporary files.
func assertNoStrayFiles(t *testing.T, root string) {
	t.Helper()
	dir, ok := strings.CutPrefix(root, "file://")
	if !ok {
		return
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("stray temporary file %s", p)
		}
		return nil
	})
}

func TestReaderAtRanges(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		r := testseed.Rand(t, 2)
		data := make([]byte, 100_000)
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		mustPut(t, s, "obj", data)
		ra, err := s.Open(ctx, "obj")
		if err != nil {
			t.Fatal(err)
		}
		defer ra.Close()
		if ra.Size() != int64(len(data)) {
			t.Fatalf("Size = %d, want %d", ra.Size(), len(data))
		}
		for range 30 {
			off := r.IntN(len(data) + 10)
			n := r.IntN(20_000)
			p := make([]byte, n)
			got, err := ra.ReadAt(p, int64(off))
			wantN := max(0, min(n, len(data)-off))
			if got != wantN || !bytes.Equal(p[:got], data[min(off, len(data)):min(off, len(data))+wantN]) {
				t.Fatalf("ReadAt(%d bytes, %d) = %d, %v; want %d bytes", n, off, got, err, wantN)
			}
			switch {
			case n == 0 && err != nil:
				t.Fatalf("empty ReadAt: %v", err)
			case n > 0 && off+n > len(data) && err != io.EOF:
				t.Fatalf("ReadAt past the end: err %v, want io.EOF", err)
			case off+n <= len(data) && err != nil:
				t.Fatalf("ReadAt within: %v", err)
			}
		}
		// A section reader over it, as snapshot readers use.
		all, err := io.ReadAll(io.NewSectionReader(ra, 0, ra.Size()))
		if err != nil || !bytes.Equal(all, data) {
			t.Fatalf("section read: %d bytes, %v", len(all), err)
		}
		if _, err := ra.ReadAt(make([]byte, 1), -1); err == nil {
			t.Errorf("negative offset accepted")
		}
		ra.Close()
		if _, err := ra.ReadAt(make([]byte, 1), 0); !errors.Is(err, storage.ErrClosed) {
			t.Errorf("ReadAt after Close = %v, want ErrClosed", err)
		}
	})
}

func TestBadKeys(t *testing.T) {
	s := open(t, fmt.Sprintf("mem://badkeys%d", uniq.Add(1)))
	ctx := context.Background()
	for _, key := range []string{"", "/a", "a/", "a//b", "./a", "a/../b", "a\\b", "a\x00b", "x.attrs", "a/b.19af3e.tmp", "\xff"} {
		if err := s.Put(ctx, key, nil); err == nil {
			t.Errorf("Put(%q) accepted", key)
		}
		if _, err := s.NewWriter(ctx, key); err == nil {
			t.Errorf("NewWriter(%q) accepted", key)
		}
		if _, err := s.Get(ctx, key); err == nil || errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want a bad-key error", key, err)
		}
	}
	for _, key := range []string{"a", "a.b/c-d_e f", "job/chk-1/_metadata", "x.tmp", "ümlaut"} {
		if err := s.Put(ctx, key, nil); err != nil {
			t.Errorf("Put(%q): %v", key, err)
		}
	}
}

func TestOpenForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	s3 := newS3(t, "")
	s3Base, s3Q, _ := strings.Cut(s3, "?")
	bucket, endpoint := startS3(t)
	legacy := "s3://" + bucket + "/p?endpoint=" + endpoint + "&region=us-east-1&s3ForcePathStyle=true&anonymous=true&request_checksum_calculation=when_required"
	for _, c := range []struct{ in, url string }{
		{"rel/root", "file://" + dir + "/rel/root"},
		{dir + "/abs", "file://" + dir + "/abs"},
		{"file://" + dir + "/x/", "file://" + dir + "/x"},
		{"file://localhost" + dir + "/y", "file://" + dir + "/y"},
		{"file://" + dir + "/with%20space", "file://" + dir + "/with%20space"},
		{"mem://forms", "mem://forms"},
		{"mem://forms/a/b/", "mem://forms/a/b"},
		{s3, s3},
		{s3Base + "/pre/fix?" + s3Q, s3Base + "/pre/fix?" + s3Q},
		{legacy, legacy},
	} {
		s, err := storage.Open(ctx, c.in)
		if err != nil {
			t.Errorf("Open(%q): %v", c.in, err)
			continue
		}
		if s.URL() != c.url {
			t.Errorf("Open(%q).URL() = %q, want %q", c.in, s.URL(), c.url)
		}
		if err := s.Put(ctx, "k", []byte("v")); err != nil {
			t.Errorf("Put through %q: %v", c.in, err)
		}
		s.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "with space", "k")); err != nil {
		t.Errorf("escaped file URL: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"file://relative/x", "file:///absolute/path"},
		{"file:///x?a=1", "no query"},
		{dir + "/afile", "not a directory"},
		{"mem://", "missing store name"},
		{"mem://x?y=1", "no query"},
		{"mem://x/a/../b", "bad prefix"},
		{"ftp://host/x", "unsupported scheme"},
		{s3Base + "-missing?" + s3Q, "does not exist"},
		{s3Base + "?" + s3Q + "&bogus=1", "bogus"},
		{"s3:///x", "missing bucket name"},
	} {
		_, err := storage.Open(ctx, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.in)) {
			t.Errorf("Open(%q) = %v, want an error naming the URL and saying %q", c.in, err, c.want)
		}
	}
}

func TestFileStoreTempFiles(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	ctx := context.Background()
	w, err := s.NewWriter(ctx, "job/chk-1/x")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("partial"))
	// While written, the object is a temporary file beside its target, not listed.
	if got := mustList(t, s, ""); len(got) != 0 {
		t.Fatalf("List during a write = %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustList(t, s, ""); !slices.Equal(got, []string{"job/chk-1/x"}) {
		t.Fatalf("List = %q", got)
	}
	assertNoStrayFiles(t, "file://"+dir)
}

// TestLargeWrite writes past the S3 multipart threshold (16 MiB): the object
// still appears only on Close, and a canceled upload leaves nothing.
func TestLargeWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2 x 17 MiB per store")
	}
	forEachScheme(t, func(t *testing.T, root string) {
		s := open(t, root)
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		const chunks = 17
		for _, cancelIt := range []bool{true, false} {
			ctx, cancel := context.WithCancel(context.Background())
			w, err := s.NewWriter(ctx, "big")
			if err != nil {
				t.Fatal(err)
			}
			for range chunks {
				if _, err := w.Write(chunk); err != nil {
					t.Fatal(err)
				}
			}
			if got := mustList(t, s, ""); len(got) != 0 {
				t.Fatalf("visible before Close: %q", got)
			}
			if cancelIt {
				cancel()
				if err := w.Close(); err == nil {
					t.Fatal("canceled Close succeeded")
				}
				if got := mustList(t, s, ""); len(got) != 0 {
					t.Fatalf("a canceled large write left %q", got)
				}
				continue
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			cancel()
			ra, err := s.Open(context.Background(), "big")
			if err != nil || ra.Size() != chunks*int64(len(chunk)) {
				t.Fatalf("Open: %v", err)
			}
			p := make([]byte, 100)
			if _, err := ra.ReadAt(p, 16<<20+5); err != nil || !bytes.Equal(p, chunk[5:105]) {
				t.Fatalf("ReadAt in the last part: %v", err)
			}
		}
	})
}

// TestOpenMissingAndDirectory: opening a key with no object, or one that
// is only a "directory" of other keys, fails with ErrNotFound on every
// store.
func TestOpenMissingAndDirectory(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		s := open(t, root)
		mustPut(t, s, "a/b/c", []byte("x"))
		for _, key := range []string{"missing", "a/b", "a"} {
			if ra, err := s.Open(context.Background(), key); !errors.Is(err, storage.ErrNotFound) {
				if ra != nil {
					ra.Close()
				}
				t.Errorf("Open(%q) = %v, want ErrNotFound", key, err)
			}
		}
	})
}
