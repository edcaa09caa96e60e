package storage_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/testseed"
)

// TestPutFileGetFile stores local files as objects and gets them back, in
// every kind of store: the handles must be the bytes' (size and CRC32C),
// the files got back the same bytes, and in a file store an immutable file
// must be a link (one inode) both ways, a mutable one a copy.
func TestPutFileGetFile(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		r := testseed.Rand(t, 3)
		local := t.TempDir()
		for i, immutable := range []bool{false, true, false, true} {
			data := make([]byte, r.IntN(3<<20))
			for j := range data {
				data[j] = byte(r.Uint32())
			}
			name := filepath.Join(local, "f"+string(rune('0'+i))+".sst")
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
			key := storage.SharedKey("job", "op-0-"+filepath.Base(name))
			h, err := storage.PutFile(ctx, s, key, name, immutable)
			if err != nil {
				t.Fatal(err)
			}
			if want := storage.HandleOf(key, data); h != want {
				t.Fatalf("PutFile handle %+v, want %+v", h, want)
			}
			if got, err := storage.ReadVerified(ctx, s, h); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("object of PutFile: %d bytes, %v; want the file's %d", len(got), err, len(data))
			}
			back := name + ".back"
			if err := storage.GetFile(ctx, s, h, back, immutable); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("GetFile: %d bytes, %v; want %d", len(got), err, len(data))
			}
			if dir, ok := strings.CutPrefix(root, "file://"); ok {
				obj := filepath.Join(dir, filepath.FromSlash(key))
				if sameFile(t, name, obj) != immutable || sameFile(t, obj, back) != immutable {
					t.Fatalf("immutable=%v: linked in %v, out %v; want links exactly for immutable files",
						immutable, sameFile(t, name, obj), sameFile(t, obj, back))
				}
				if m, _ := filepath.Glob(obj + ".*.tmp"); len(m) != 0 {
					t.Fatalf("temporary files left: %q", m)
				}
			}
		}
	})
}

// TestGetFileOverLink: getting an object onto a file that is a link to it
// (left by a download that failed part way) must replace the file, not
// write into it: that would truncate the object.
func TestGetFileOverLink(t *testing.T) {
	ctx := context.Background()
	s := open(t, "file://"+t.TempDir()+"/root")
	data := bytes.Repeat([]byte("sst bytes "), 10000)
	name, h := putLocal(t, s, "job/shared/a.sst", data)
	for _, immutable := range []bool{false, true} {
		// name is a link to the object: get the object onto it.
		if err := storage.GetFile(ctx, s, h, name, immutable); err != nil {
			t.Fatalf("immutable=%v: %v", immutable, err)
		}
		if got, err := storage.ReadVerified(ctx, s, h); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("immutable=%v: the object after GetFile onto its link: %d bytes, %v", immutable, len(got), err)
		}
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("immutable=%v: the file got: %d bytes, %v", immutable, len(got), err)
		}
	}
}

// TestLinkedFilesHonorContext: a canceled context stops PutFile and
// GetFile on the linking path too, and leaves neither an object nor a file.
func TestLinkedFilesHonorContext(t *testing.T) {
	s := open(t, "file://"+t.TempDir()+"/root")
	name, h := putLocal(t, s, "job/shared/a.sst", bytes.Repeat([]byte("sst"), 300000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := storage.PutFile(ctx, s, "job/shared/b.sst", name, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutFile with a canceled context: %v", err)
	}
	if _, err := s.Get(context.Background(), "job/shared/b.sst"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a canceled PutFile left an object: %v", err)
	}
	out := filepath.Join(filepath.Dir(name), "out.sst")
	if err := storage.GetFile(ctx, s, h, out, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetFile with a canceled context: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a canceled GetFile left %s (%v)", out, err)
	}
}

// TestGetFileCorrupt: an object whose bytes do not match its handle is a
// CorruptError naming the key, and leaves no file, linked or copied.
func TestGetFileCorrupt(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		name, h := putLocal(t, s, "job/shared/x.sst", []byte("sst bytes"))
		local := filepath.Dir(name)
		for _, bad := range []storage.ObjectHandle{{Key: h.Key, Size: h.Size, CRC: h.CRC ^ 1}, {Key: h.Key, Size: h.Size + 1, CRC: h.CRC}} {
			for _, immutable := range []bool{false, true} {
				out := filepath.Join(local, "out.sst")
				err := storage.GetFile(ctx, s, bad, out, immutable)
				var ce *storage.CorruptError
				if !errors.As(err, &ce) || ce.Key != h.Key {
					t.Fatalf("GetFile of a corrupt object: %v, want a CorruptError naming %q", err, h.Key)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Fatalf("GetFile of a corrupt object left %s (%v)", out, err)
				}
			}
		}
	})
}

// TestPutFileGetFileFaults: injected failures fail PutFile without an
// object, linked or not, and GetFile without a file.
func TestPutFileGetFileFaults(t *testing.T) {
	ctx := context.Background()
	s := open(t, "file://"+t.TempDir()+"/root")
	name, h := putLocal(t, s, "job/shared/a.sst", []byte("sst bytes"))
	local := filepath.Dir(name)
	failing := storage.WithFaults(s, func(op, key string) (time.Duration, error) {
		return 0, storage.ErrInjected
	})
	for _, immutable := range []bool{false, true} {
		if _, err := storage.PutFile(ctx, failing, "job/shared/b.sst", name, immutable); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("PutFile under an injected failure: %v", err)
		}
		if _, err := s.Get(ctx, "job/shared/b.sst"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a failed PutFile left an object: %v", err)
		}
		out := filepath.Join(local, "out.sst")
		if err := storage.GetFile(ctx, failing, h, out, immutable); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("GetFile under an injected failure: %v", err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("a failed GetFile left %s (%v)", out, err)
		}
	}
}

// TestPutFileAcrossFileSystems: a file store on another file system than
// the file (/dev/shm, a tmpfs, against the test's temporary directory)
// cannot link it and copies it; so does a savepoint whose folder is on
// another file system than its checkpoint.
func TestPutFileAcrossFileSystems(t *testing.T) {
	local := t.TempDir()
	shm, err := os.MkdirTemp("/dev/shm", "weir-link-test-")
	if err != nil {
		t.Skipf("no /dev/shm to put a store on another file system: %v", err)
	}
	defer os.RemoveAll(shm)
	if device(t, shm) == device(t, local) {
		t.Skipf("/dev/shm and %s are on one file system here", local)
	}
	ctx := context.Background()
	src := open(t, "file://"+local+"/checkpoints")
	m := checkpointWithObjects(t, src, "job1", 7)
	dst, err := storage.OpenSavepointDir(ctx, "file://"+shm, storage.SavepointDirName("job1"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	sp, err := storage.WriteSavepoint(ctx, src, m, dst)
	if err != nil {
		t.Fatalf("a savepoint onto another file system: %v", err)
	}
	if _, err := storage.ReadVerified(ctx, dst, sp.Operators[1].Subtasks[0].Keyed[0].Object); err != nil {
		t.Fatal(err)
	}

	s := open(t, "file://"+shm+"/root")
	name := filepath.Join(local, "000004.sst")
	data := bytes.Repeat([]byte("sst"), 100000)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := storage.PutFile(ctx, s, "job/shared/a.sst", name, true)
	if err != nil || h != storage.HandleOf("job/shared/a.sst", data) {
		t.Fatalf("PutFile across file systems: %+v, %v", h, err)
	}
	back := filepath.Join(local, "back.sst")
	if err := storage.GetFile(ctx, s, h, back, true); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetFile across file systems: %d bytes, %v", len(got), err)
	}
}

// putLocal writes data to a file 000004.sst in a new local directory and
// stores it, immutable, as key.
func putLocal(t *testing.T, s *storage.Store, key string, data []byte) (name string, h storage.ObjectHandle) {
	t.Helper()
	name = filepath.Join(t.TempDir(), "000004.sst")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := storage.PutFile(context.Background(), s, key, name, true)
	if err != nil {
		t.Fatal(err)
	}
	return name, h
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	ia, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(ia, ib)
}

func device(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(info.Sys().(*syscall.Stat_t).Dev)
}
