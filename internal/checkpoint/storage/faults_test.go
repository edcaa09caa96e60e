package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/testseed"
)

func TestFaultOps(t *testing.T) {
	ctx := context.Background()
	s := open(t, fmt.Sprintf("mem://faultops%d/root", uniq.Add(1)))
	rec := &recorder{}
	f := storage.WithFaults(s, rec.fault)
	f.Put(ctx, "a/p", []byte("x"))
	w, _ := f.NewWriter(ctx, "a/w")
	w.Write([]byte("y"))
	w.Close()
	f.Get(ctx, "a/p")
	r, _ := f.Open(ctx, "a/w")
	r.ReadAt(make([]byte, 1), 0)
	r.Close()
	f.List(ctx, "a/")
	f.Delete(ctx, "a/p")
	want := []string{"put a/p", "write a/w", "get a/p", "open a/w", "read a/w", "list a/", "delete a/p"}
	if !slices.Equal(rec.calls, want) {
		t.Fatalf("calls %q, want %q", rec.calls, want)
	}
	// Closing the view leaves the store open.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a/w"); err != nil {
		t.Fatalf("after closing the view: %v", err)
	}
}

func TestInjectedFailuresLeaveNothing(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		mustPut(t, s, "old", []byte("old"))
		rec := &recorder{fail: func(op, key string) bool { return true }}
		f := storage.WithFaults(s, rec.fault)
		for _, key := range []string{"new", "old"} {
			if err := f.Put(ctx, key, []byte("data")); !errors.Is(err, storage.ErrInjected) {
				t.Fatalf("Put = %v", err)
			}
			w, err := f.NewWriter(ctx, key)
			if err != nil {
				t.Fatalf("NewWriter = %v; an injected write failure shows at Close", err)
			}
			if _, err := w.Write(bytes.Repeat([]byte("d"), 10_000)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); !errors.Is(err, storage.ErrInjected) {
				t.Fatalf("Close = %v", err)
			}
		}
		if got := mustList(t, s, ""); !slices.Equal(got, []string{"old"}) {
			t.Fatalf("after failed writes: %q", got)
		}
		if got, _ := s.Get(ctx, "old"); string(got) != "old" {
			t.Fatalf("a failed write changed old to %q", got)
		}
		assertNoStrayFiles(t, root)
		if _, err := f.Get(ctx, "old"); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("Get = %v", err)
		}
		if _, err := f.List(ctx, ""); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("List = %v", err)
		}
		if err := f.Delete(ctx, "old"); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("Delete = %v", err)
		}
		// Reads: failing only "read" fails ReadAt of an opened object.
		rec.fail = func(op, key string) bool { return op == storage.OpRead }
		r, err := f.Open(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadAt(make([]byte, 3), 0); !errors.Is(err, storage.ErrInjected) {
			t.Fatalf("ReadAt = %v", err)
		}
	})
}

func TestFaultDelayHonoursContext(t *testing.T) {
	s := open(t, fmt.Sprintf("mem://faultdelay%d", uniq.Add(1))) // fresh under -count
	f := storage.WithFaults(s, func(op, key string) (time.Duration, error) { return time.Hour, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := f.Put(ctx, "k", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put = %v, want DeadlineExceeded", err)
	}
	w, err := f.NewWriter(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewWriter = %v, %v", w, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("the delay ignored the context")
	}
	if got := mustList(t, s, ""); len(got) != 0 {
		t.Fatalf("left %q", got)
	}
	// Delays add up through stacked views; a short one runs to its end.
	short := storage.WithFaults(storage.WithFaults(s, func(string, string) (time.Duration, error) { return time.Millisecond, nil }),
		func(string, string) (time.Duration, error) { return time.Millisecond, nil })
	start = time.Now()
	mustPut(t, short, "k", nil)
	if d := time.Since(start); d < 2*time.Millisecond {
		t.Fatalf("stacked delays took %v", d)
	}
}

// TestRandomFaults drives a store through random operations with random
// injected failures and delays, checking it against a map of the operations
// that succeeded.
func TestRandomFaults(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		r := testseed.Rand(t, 5)
		faults := &storage.Faults{Rand: testseed.Rand(t, 6), ErrorRate: 0.3, MaxDelay: 200 * time.Microsecond}
		f := storage.WithFaults(s, faults.Func())
		model := map[string][]byte{}
		n := 150
		if testing.Short() {
			n = 50
		}
		for i := range n {
			key := fmt.Sprintf("job/chk-%d/f%d", r.IntN(3)+1, r.IntN(4))
			data := bytes.Repeat([]byte{byte(i)}, r.IntN(5000))
			switch op := r.IntN(6); op {
			case 0, 1:
				if err := f.Put(ctx, key, data); err == nil {
					model[key] = data
				} else if !errors.Is(err, storage.ErrInjected) {
					t.Fatal(err)
				}
			case 2, 3:
				w, err := f.NewWriter(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(w, bytes.NewReader(data))
				if err := w.Close(); err == nil {
					model[key] = data
				} else if !errors.Is(err, storage.ErrInjected) {
					t.Fatal(err)
				}
			case 4:
				if err := f.Delete(ctx, key); err == nil {
					delete(model, key)
				} else if !errors.Is(err, storage.ErrInjected) {
					t.Fatal(err)
				}
			case 5:
				got, err := f.Get(ctx, key)
				want, ok := model[key]
				switch {
				case errors.Is(err, storage.ErrInjected):
				case !ok && !errors.Is(err, storage.ErrNotFound):
					t.Fatalf("Get(%s) of a missing key = %v", key, err)
				case ok && (err != nil || !bytes.Equal(got, want)):
					t.Fatalf("Get(%s) = %d bytes, %v; want %d bytes", key, len(got), err, len(want))
				}
			}
		}
		if faults.Injected("") == 0 {
			t.Fatalf("no fault injected")
		}
		if got, want := mustList(t, s, ""), slices.Sorted(maps.Keys(model)); !slices.Equal(got, want) {
			t.Fatalf("store holds %q, want %q", got, want)
		}
		for k, v := range model {
			if got, err := s.Get(ctx, k); err != nil || !bytes.Equal(got, v) {
				t.Fatalf("%s: %d bytes, %v; want %d bytes", k, len(got), err, len(v))
			}
		}
		assertNoStrayFiles(t, root)
	})
}
