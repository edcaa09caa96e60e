package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// Writers beyond the bound of write memory wait for one to end, in order,
// and a waiter whose context ends gives up without taking memory.
func TestWriteMemoryBoundWaits(t *testing.T) {
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		if err := s.LimitWriteMemory(2 * s.WriterMemory()); err != nil {
			t.Fatal(err)
		}
		w1, err := s.NewWriter(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		w2, err := s.NewWriter(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		// A third waits; one whose context ends meanwhile gives up.
		cctx, cancel := context.WithCancel(ctx)
		gaveUp := make(chan error, 1)
		go func() {
			w, err := s.NewWriter(cctx, "never")
			if err == nil {
				w.Close()
			}
			gaveUp <- err
		}()
		third := make(chan error, 1)
		go func() {
			time.Sleep(20 * time.Millisecond) // queued after the one that gives up
			w, err := s.NewWriter(ctx, "c")
			if err == nil {
				_, err = w.Write([]byte("third"))
				err = errors.Join(err, w.Close())
			}
			third <- err
		}()
		time.Sleep(60 * time.Millisecond)
		select {
		case err := <-third:
			t.Fatalf("a third writer opened within a bound of two: %v", err)
		case err := <-gaveUp:
			t.Fatalf("a waiting writer returned before its context ended: %v", err)
		default:
		}
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiter whose context ended: %v, want context.Canceled", err)
		}
		select {
		case err := <-third:
			t.Fatalf("a third writer opened within a bound of two: %v", err)
		case <-time.After(30 * time.Millisecond):
		}
		if err := w1.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-third:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the third writer still waits after one of two closed")
		}
		if err := w2.Close(); err != nil {
			t.Fatal(err)
		}
		// Everything is back: two open at once without waiting.
		for _, k := range []string{"d", "e"} {
			tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
			w, err := s.NewWriter(tctx, k)
			tcancel()
			if err != nil {
				t.Fatalf("after every writer closed: %v", err)
			}
			defer w.Close()
		}
	})
}

// Many concurrent writes of random sizes under a bound of a few writers:
// never more writers open than the bound allows, and every object reads
// back as written.
func TestWriteMemoryBoundUnderLoad(t *testing.T) {
	rng := testseed.Rand(t, 1)
	forEachScheme(t, func(t *testing.T, root string) {
		ctx := context.Background()
		s := open(t, root)
		most := 1 + rng.IntN(3)
		if err := s.LimitWriteMemory(int64(most) * s.WriterMemory()); err != nil {
			t.Fatal(err)
		}
		const writes = 24
		data := make([][]byte, writes)
		for i := range data {
			data[i] = bytes.Repeat([]byte{byte(i)}, rng.IntN(200_000))
		}
		var inUse, peak atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, writes)
		for i := range writes {
			wg.Go(func() {
				key := fmt.Sprintf("obj-%d", i)
				if i%3 == 0 { // a Put counts as a writer on a bucket store
					errs <- s.Put(ctx, key, data[i])
					return
				}
				w, err := s.NewWriter(ctx, key)
				if err != nil {
					errs <- err
					return
				}
				n := inUse.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond)
				_, err = w.Write(data[i])
				inUse.Add(-1)
				errs <- errors.Join(err, w.Close())
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if p := peak.Load(); p > int64(most) {
			t.Fatalf("%d writers open at once under a bound of %d", p, most)
		}
		for i := range writes {
			got, err := s.Get(ctx, fmt.Sprintf("obj-%d", i))
			if err != nil || !bytes.Equal(got, data[i]) {
				t.Fatalf("obj-%d: %d bytes (%v), want %d", i, len(got), err, len(data[i]))
			}
		}
	})
}

// A bound below one writer's buffers is refused, as is a writer larger than
// a bound it shares (a savepoint to S3 under a file store's bound).
func TestWriteMemoryBoundTooSmall(t *testing.T) {
	file := open(t, "file://"+t.TempDir()+"/root")
	err := file.LimitWriteMemory(file.WriterMemory() - 1)
	if err == nil || !strings.Contains(err.Error(), "less than one writer's buffers") {
		t.Fatalf("a bound below one writer: %v", err)
	}
	if err := file.LimitWriteMemory(file.WriterMemory()); err != nil {
		t.Fatal(err)
	}
	bucket := open(t, fmt.Sprintf("mem://small%d/root", time.Now().UnixNano()))
	if bucket.WriterMemory() <= file.WriterMemory() {
		t.Fatalf("a bucket's writer (%d bytes) should need more than a file store's (%d)", bucket.WriterMemory(), file.WriterMemory())
	}
	bucket.ShareWriteMemory(file)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := bucket.NewWriter(ctx, "big"); err == nil || !strings.Contains(err.Error(), "more than the bound") {
		t.Fatalf("a writer larger than its shared bound: %v", err)
	}
}
