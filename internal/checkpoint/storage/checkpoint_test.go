package storage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
)

// writeCheckpoint writes the task files of m (with content matching their
// handles' sizes) and, if complete, its metadata.
func writeCheckpoint(t *testing.T, s *storage.Store, m storage.Metadata, complete bool) storage.Metadata {
	t.Helper()
	ctx := context.Background()
	put := func(h *storage.ObjectHandle) {
		data := bytes.Repeat([]byte(h.Key[len(h.Key)-1:]), int(h.Size))
		got, err := storage.PutObject(ctx, s, h.Key, data)
		if err != nil {
			t.Fatal(err)
		}
		*h = got
	}
	for i := range m.Operators {
		for j := range m.Operators[i].Subtasks {
			st := &m.Operators[i].Subtasks[j]
			if st.Operator != nil {
				put(st.Operator)
			}
			for k := range st.InputChannels {
				put(&st.InputChannels[k])
			}
			for k := range st.OutputChannels {
				put(&st.OutputChannels[k])
			}
			for k := range st.Keyed {
				kh := &st.Keyed[k]
				if kh.Kind == storage.KindCanonical {
					put(&kh.Object)
				}
				for f := range kh.Files {
					put(&kh.Files[f].Object)
				}
				if kh.Timers != nil {
					put(kh.Timers)
				}
			}
		}
	}
	if complete {
		if err := storage.WriteMetadata(ctx, s, m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestMetadataThroughStore(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		m := writeCheckpoint(t, s, sampleMetadata("job1", 4), true)
		got, err := storage.ReadMetadata(ctx, s, "job1", 4)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, m) {
			t.Fatalf("ReadMetadata =\n%+v\nwant\n%+v", *got, m)
		}
		if _, err := storage.ReadMetadata(ctx, s, "job1", 5); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("missing metadata: %v, want ErrNotFound", err)
		}
		// Every handle reads back verified.
		for _, op := range got.Operators {
			for _, st := range op.Subtasks {
				for _, kh := range st.Keyed {
					for _, f := range kh.Files {
						if _, err := storage.ReadVerified(ctx, s, f.Object); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
		// A metadata file copied to another checkpoint is refused.
		data, _ := s.Get(ctx, storage.MetadataKey("job1", 4))
		mustPut(t, s, storage.MetadataKey("job1", 6), data)
		_, err = storage.ReadMetadata(ctx, s, "job1", 6)
		var ce *storage.CorruptError
		if !errors.As(err, &ce) || ce.Key != storage.MetadataKey("job1", 6) {
			t.Fatalf("misplaced metadata: %v, want a CorruptError naming the key", err)
		}
		bad := m
		bad.CheckpointID = 0
		if err := storage.WriteMetadata(ctx, s, bad); err == nil {
			t.Fatalf("invalid metadata written")
		}
	})
}

func TestReadVerified(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		w, err := storage.NewObjectWriter(ctx, s, "job/chk-1/obj")
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("hello, "))
		w.Write([]byte("world"))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		h := w.Handle()
		if want := storage.HandleOf("job/chk-1/obj", []byte("hello, world")); h != want {
			t.Fatalf("Handle = %+v, want %+v", h, want)
		}
		if data, err := storage.ReadVerified(ctx, s, h); err != nil || string(data) != "hello, world" {
			t.Fatalf("ReadVerified = %q, %v", data, err)
		}
		var buf bytes.Buffer
		if err := storage.CopyVerified(ctx, s, h, &buf); err != nil || buf.String() != "hello, world" {
			t.Fatalf("CopyVerified = %q, %v", buf.String(), err)
		}
		for _, c := range []struct {
			part string
			h    storage.ObjectHandle
		}{
			{"size", storage.ObjectHandle{Key: h.Key, Size: h.Size + 1, CRC: h.CRC}},
			{"size", storage.ObjectHandle{Key: h.Key, Size: h.Size - 1, CRC: h.CRC}},
			{"checksum", storage.ObjectHandle{Key: h.Key, Size: h.Size, CRC: h.CRC ^ 1}},
		} {
			for name, read := range map[string]func() error{
				"ReadVerified": func() error { _, err := storage.ReadVerified(ctx, s, c.h); return err },
				"CopyVerified": func() error { return storage.CopyVerified(ctx, s, c.h, new(bytes.Buffer)) },
			} {
				err := read()
				var ce *storage.CorruptError
				if !errors.As(err, &ce) || ce.Part != c.part || ce.Key != h.Key || !strings.Contains(err.Error(), h.Key) {
					t.Errorf("%s of %+v: %v, want corrupt %s naming the key", name, c.h, err, c.part)
				}
			}
		}
		if _, err := storage.ReadVerified(ctx, s, storage.ObjectHandle{Key: "job/none"}); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("ReadVerified missing = %v", err)
		}
		if err := storage.CopyVerified(ctx, s, storage.ObjectHandle{Key: "job/none"}, new(bytes.Buffer)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("CopyVerified missing = %v", err)
		}
	})
}

// corruptMetadata writes a complete checkpoint whose metadata has one byte flipped.
func corruptMetadata(t *testing.T, s *storage.Store, m storage.Metadata) {
	t.Helper()
	writeCheckpoint(t, s, m, false)
	data := storage.EncodeMetadata(m)
	data[len(data)/2] ^= 0x20
	mustPut(t, s, storage.MetadataKey(m.JobID, m.CheckpointID), data)
}

func withTimes(m storage.Metadata, name string, complete int64) storage.Metadata {
	m.JobName, m.CompleteMillis, m.TriggerMillis = name, complete, complete-10
	return m
}

// logBuffer is a slog handler's output, safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines(level string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, "level="+level) {
			out = append(out, l)
		}
	}
	return out
}

func TestCompletedAndLatest(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		var logs logBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

		if m, err := storage.Latest(ctx, s, "wordcount", log); m != nil || err != nil {
			t.Fatalf("Latest of an empty store = %v, %v", m, err)
		}
		writeCheckpoint(t, s, withTimes(sampleMetadata("j1", 1), "wordcount", 1000), true)
		writeCheckpoint(t, s, withTimes(sampleMetadata("j1", 2), "wordcount", 2000), true)
		writeCheckpoint(t, s, withTimes(sampleMetadata("j1", 3), "wordcount", 3000), false) // partial
		corruptMetadata(t, s, withTimes(sampleMetadata("j1", 4), "wordcount", 4000))
		writeCheckpoint(t, s, withTimes(sampleMetadata("j1", 10), "wordcount", 500), false) // partial, sorts after 2 as text
		writeCheckpoint(t, s, withTimes(sampleMetadata("j2", 9), "other", 9000), true)
		writeCheckpoint(t, s, withTimes(sampleMetadata("j2", 10), "other", 10000), false)
		writeCheckpoint(t, s, withTimes(sampleMetadata("j3", 1), "wordcount", 1500), true)
		mustPut(t, s, "not-a-job.txt", []byte("x"))
		mustPut(t, s, "j1/chk-x/_metadata", []byte("x"))
		mustPut(t, s, "j1/chk-05/_metadata", []byte("x"))

		ids, err := storage.Completed(ctx, s, "j1")
		if err != nil || !slices.Equal(ids, []int64{1, 2}) {
			t.Fatalf("Completed(j1) = %v, %v; want [1 2]", ids, err)
		}
		if ids, err := storage.Completed(ctx, s, "none"); err != nil || len(ids) != 0 {
			t.Fatalf("Completed(none) = %v, %v", ids, err)
		}

		m, err := storage.Latest(ctx, s, "wordcount", log)
		if err != nil || m == nil || m.JobID != "j1" || m.CheckpointID != 2 {
			t.Fatalf("Latest = %+v, %v; want j1 chk-2", m, err)
		}
		warns := logs.lines("WARN")
		if len(warns) != 3 {
			t.Fatalf("want 3 warnings (j1 chk-10 and chk-3 partial, chk-4 corrupt), got:\n%s", strings.Join(warns, "\n"))
		}
		for i, want := range []struct{ id, why string }{{"10", "no _metadata"}, {"4", "corrupt _metadata"}, {"3", "no _metadata"}} {
			if !strings.Contains(warns[i], "checkpoint="+want.id) || !strings.Contains(warns[i], "falling_back_to=2") || !strings.Contains(warns[i], "job_id=j1") || !strings.Contains(warns[i], want.why) {
				t.Errorf("warning %d = %s; want checkpoint %s of j1, %q", i, warns[i], want.id, want.why)
			}
		}
		if debug := logs.lines("DEBUG"); len(debug) != 1 || !strings.Contains(debug[0], "job_id=j2") {
			t.Errorf("want one debug line for j2's partial checkpoint of another job, got %q", debug)
		}

		// Ties on completion time go to the higher checkpoint ID.
		writeCheckpoint(t, s, withTimes(sampleMetadata("j4", 5), "wordcount", 2000), true)
		if m, _ := storage.Latest(ctx, s, "wordcount", nil); m == nil || m.JobID != "j4" {
			t.Fatalf("Latest with a tie = %+v, want j4", m)
		}
		if m, err := storage.Latest(ctx, s, "other", nil); err != nil || m == nil || m.JobID != "j2" || m.CheckpointID != 9 {
			t.Fatalf("Latest(other) = %+v, %v", m, err)
		}
		if m, err := storage.Latest(ctx, s, "none", nil); m != nil || err != nil {
			t.Fatalf("Latest(none) = %+v, %v", m, err)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := storage.Latest(canceled, s, "wordcount", nil); err == nil {
			t.Fatalf("Latest with a canceled context succeeded")
		}
	})
}

func TestResolve(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		m := writeCheckpoint(t, s, sampleMetadata("job7", 7), true)
		writeCheckpoint(t, s, sampleMetadata("job7", 8), false)
		corruptMetadata(t, s, sampleMetadata("job7", 9))
		base, q, _ := strings.Cut(root, "?")
		if q != "" {
			q = "?" + q
		}
		forms := []string{base + "/job7/chk-7" + q, base + "/job7/chk-7/" + q, base + "/job7/chk-7/_metadata" + q}
		if dir, ok := strings.CutPrefix(base, "file://"); ok {
			rel, err := filepath.Rel(mustGetwd(t), dir)
			if err != nil {
				t.Fatal(err)
			}
			forms = append(forms, dir+"/job7/chk-7", dir+"/job7/chk-7/_metadata", filepath.Join(rel, "job7", "chk-7"))
		}
		for _, form := range forms {
			rs, got, err := storage.Resolve(ctx, form)
			if err != nil {
				t.Errorf("Resolve(%q): %v", form, err)
				continue
			}
			if rs.URL() != s.URL() {
				t.Errorf("Resolve(%q) store %s, want %s", form, rs.URL(), s.URL())
			}
			if !reflect.DeepEqual(*got, m) {
				t.Errorf("Resolve(%q) metadata differs", form)
			}
			// The metadata's keys resolve on the returned store.
			if _, err := storage.ReadVerified(ctx, rs, *got.Operators[0].Subtasks[0].Operator); err != nil {
				t.Errorf("through Resolve(%q): %v", form, err)
			}
			rs.Close()
		}
		for _, c := range []struct{ in, want string }{
			{base + "/job7/chk-8" + q, "has no _metadata"},
			{base + "/job7/chk-9" + q, "corrupt"},
			{base + "/job7/chk-x" + q, "not a checkpoint directory"},
			{base + "/job7" + q, "not a checkpoint directory"},
			{base + "/job7/shared/x" + q, "not a checkpoint directory"},
			{base + "/nojob/chk-1" + q, "has no _metadata"},
			{"ftp://x/job/chk-1", "unsupported scheme"},
		} {
			_, _, err := storage.Resolve(ctx, c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.in) {
				t.Errorf("Resolve(%q) = %v, want an error naming it and saying %q", c.in, err, c.want)
			}
		}
	})
	t.Run("chk at the top", func(t *testing.T) {
		if _, _, err := storage.Resolve(context.Background(), "mem://top/chk-1"); err == nil || !strings.Contains(err.Error(), "want a checkpoint directory") {
			t.Errorf("Resolve without a job directory = %v", err)
		}
	})
	t.Run("missing directory is not created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nothing")
		if _, _, err := storage.Resolve(context.Background(), dir+"/job/chk-1"); err == nil {
			t.Fatal("resolved a missing directory")
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Resolve created %s", dir)
		}
	})
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// recorder is a FaultFunc that records calls and fails those fail selects.
type recorder struct {
	mu    sync.Mutex
	calls []string // "op key"
	fail  func(op, key string) bool
}

func (r *recorder) fault(op, key string) (time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, op+" "+key)
	if r.fail != nil && r.fail(op, key) {
		return 0, storage.ErrInjected
	}
	return 0, nil
}

func (r *recorder) ops(op string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for _, c := range r.calls {
		if k, ok := strings.CutPrefix(c, op+" "); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func TestDiscard(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		m1 := writeCheckpoint(t, s, sampleMetadata("job", 1), true)
		m2 := writeCheckpoint(t, s, sampleMetadata("job", 2), true)
		mustPut(t, s, "job/shared/only-1.sst", []byte("x"))
		before := mustList(t, s, "")

		// The metadata cannot be deleted: nothing else is.
		rec := &recorder{fail: func(op, key string) bool { return op == storage.OpDelete }}
		if err := storage.Discard(ctx, storage.WithFaults(s, rec.fault), m1, nil); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("Discard with a failing delete = %v", err)
		}
		if after := mustList(t, s, ""); !slices.Equal(after, before) {
			t.Fatalf("a failed Discard deleted %q", setMinus(before, after))
		}

		rec = &recorder{}
		shared := []string{"job/shared/only-1.sst"}
		if err := storage.Discard(ctx, storage.WithFaults(s, rec.fault), m1, shared); err != nil {
			t.Fatal(err)
		}
		deleted := rec.ops(storage.OpDelete)
		if len(deleted) == 0 || deleted[0] != storage.MetadataKey("job", 1) {
			t.Fatalf("Discard deleted %q first, want the metadata first", deleted)
		}
		after := mustList(t, s, "")
		gone := setMinus(before, after)
		var want []string
		for _, k := range before {
			if strings.HasPrefix(k, storage.CheckpointPrefix("job", 1)) || slices.Contains(shared, k) {
				want = append(want, k)
			}
		}
		if !slices.Equal(gone, want) {
			t.Fatalf("Discard deleted %q, want %q", gone, want)
		}
		if ids, _ := storage.Completed(ctx, s, "job"); !slices.Equal(ids, []int64{2}) {
			t.Fatalf("after Discard, Completed = %v", ids)
		}
		// Checkpoint 2's shared files are still there.
		for _, k := range m2.SharedKeys() {
			if !slices.Contains(after, k) {
				t.Errorf("shared %s of checkpoint 2 deleted", k)
			}
		}
		if dir, ok := strings.CutPrefix(root, "file://"); ok {
			if _, err := os.Stat(filepath.Join(dir, "job", "chk-1")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the chk-1 directory remains: %v", err)
			}
		}
	})
}

func TestDiscardRemovesCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	m := writeCheckpoint(t, s, sampleMetadata("job", 1), true)
	// A write interrupted by a crash leaves its temporary file.
	stray := filepath.Join(dir, "job", "chk-1", "x.18ed10e4cdbb261c.tmp")
	if err := os.WriteFile(stray, []byte("partial"), 0o666); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "job/chk-1/sub/dir/file", []byte("x"))
	if err := os.MkdirAll(filepath.Join(dir, "job", "chk-1", "empty"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := storage.Discard(context.Background(), s, m, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "job", "chk-1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("chk-1 remains after Discard: %v", err)
	}
}

// setMinus returns the elements of a (sorted) not in b.
func setMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
