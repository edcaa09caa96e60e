//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package file_test

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/internal/sourcetest"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/source"
	"go.uber.org/goleak"
)

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
}

// A FIFO is read as one split, to its end, by one subtask, without seeking:
// all lines, in order, though the writer writes more than the source holds
// at once.
func TestFIFOIsReadAsOneStream(t *testing.T) {
	defer goleak.VerifyNone(t)
	rng := testseed.Rand(t, 7)
	for _, p := range []int{1, 3} {
		want, text := randomText(rng, 20_000+rng.IntN(5000))
		rng := rand.New(rand.NewPCG(rng.Uint64(), 0)) // the writer's
		path := filepath.Join(t.TempDir(), "fifo")
		mkfifo(t, path)
		go func() {
			w, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer w.Close()
			bw := bufio.NewWriterSize(w, 4096)
			for len(text) > 0 { // in small writes, so reads return parts of lines
				n := min(len(text), 1+rng.IntN(5000))
				bw.WriteString(text[:n])
				bw.Flush()
				text = text[n:]
			}
		}()
		var all []string
		readers := 0
		for _, part := range readSubtasks[string](t, file.TextSource{Path: path}, p) {
			if len(part) > 0 {
				readers++
			}
			all = append(all, part...)
		}
		if readers != 1 {
			t.Fatalf("parallelism %d: %d subtasks read the FIFO", p, readers)
		}
		if !slices.Equal(all, want) {
			t.Fatalf("parallelism %d: %d lines, want %d, in order", p, len(all), len(want))
		}
	}
}

// The line source numbers the lines of a FIFO too.
func TestLineSourceReadsFIFO(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "tx")
	mkfifo(t, path)
	go func() {
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			fmt.Fprint(w, "a\r\nb\n\nc")
			w.Close()
		}
	}()
	got := readSubtasks[file.Line](t, file.LineSource{Path: path}, 1)[0]
	want := []file.Line{{path, 1, "a"}, {path, 2, "b"}, {path, 3, ""}, {path, 4, "c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A directory's FIFOs are not among its files: reading the directory does
// not wait for a writer.
func TestDirectorySkipsFIFOs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x\ny\n"), 0o644)
	mkfifo(t, filepath.Join(dir, "b.fifo"))
	got := readAll(t, file.TextSource{Path: dir}, 2)
	slices.Sort(got)
	if !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("got %q", got)
	}
}

// Closing the reader of a FIFO stops its reading goroutine, whether it
// still waits for a writer to open the FIFO or waits for the next line of
// an open writer: a canceled job does not hang or leak.
func TestCloseStopsAWaitingFIFO(t *testing.T) {
	defer goleak.VerifyNone(t)
	closeQuickly := func(what string, job interface{ Close() error }) {
		t.Helper()
		t0 := time.Now()
		job.Close()
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%s: Close took %v", what, d)
		}
	}

	// Nobody opens the FIFO for writing.
	path := filepath.Join(t.TempDir(), "nobody")
	mkfifo(t, path)
	job := openOne[string](t, file.TextSource{Path: path})
	pollUntil(t, job, "split", func(st source.Status) bool { return !job.Pending() && st == source.NothingAvailable })
	if st, wait, _, err := job.Reader(0).Poll(); st != source.NothingAvailable || wait == nil || err != nil {
		t.Fatalf("no writer: Poll = %v, %v, %v; want NothingAvailable with a channel", st, wait, err)
	}
	closeQuickly("no writer", job)

	// A writer wrote a line and keeps the FIFO open.
	path = filepath.Join(t.TempDir(), "idle")
	mkfifo(t, path)
	opened := make(chan *os.File)
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			close(opened)
			return
		}
		fmt.Fprintln(w, "hello")
		opened <- w
	}()
	job = openOne[string](t, file.TextSource{Path: path})
	pollUntil(t, job, "line", func(st source.Status) bool {
		if st == source.EndOfInput {
			t.Fatal("end of input with the writer still there")
		}
		return len(job.Reader(0).Out) > 0
	})
	w := <-opened
	closeQuickly("idle writer", job)
	if w != nil {
		w.Close()
	}
	if got := job.Reader(0).Out; !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("got %q", got)
	}
}

// A FIFO that was being read when the checkpoint was taken cannot be
// resumed: the restore fails and says that a pipe is not replayable.
func TestFIFOIsNotReplayable(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "fifo")
	mkfifo(t, path)
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			close(opened)
			return
		}
		fmt.Fprint(w, "a\nb\n")
		opened <- w
	}()
	src := file.TextSource{Path: path}
	job := openOne[string](t, src)
	pollUntil(t, job, "a line", func(source.Status) bool { return len(job.Reader(0).Out) > 0 })
	cp, err := job.Checkpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	if w := <-opened; w != nil {
		w.Close()
	}
	job.Close()
	_, err = sourcetest.Restore[string](src, cp, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot resume reading "+path+" (a pipe, FIFO or device") || !strings.Contains(err.Error(), "not replayable") {
		t.Fatalf("restore: %v", err)
	}
}

// A FIFO output is opened and written directly: no temporary file, no
// rename, and the FIFO stays a FIFO. At parallelism above 1 it is refused.
func TestFIFOOutputIsWrittenDirectly(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	mkfifo(t, path)
	if err := textSink(path).Validate(1); err != nil {
		t.Fatal(err)
	}
	if err := textSink(path).Validate(2); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("Validate at parallelism 2 = %v, want an error", err)
	}
	got := readAllAsync(path)
	if err := writeLines(textSink(path), 0, 1, "a", "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "a\nb\n" {
			t.Fatalf("the reader got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader got no end of input")
	}
	if st, err := os.Lstat(path); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v, %v", st, err)
	}
	if got := listTree(t, dir); len(got) != 2 {
		t.Fatalf("left %v", got)
	}
}

// Opening a FIFO output waits for a reader where cancellation is seen, not
// in open(2): a canceled job whose FIFO nobody reads ends.
func TestFIFOOutputWaitsForReaderCancelably(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "out")
	mkfifo(t, path)
	cancel := make(chan struct{})
	type result struct {
		w   sink.Writer[string]
		err error
	}
	opened := make(chan result, 1)
	go func() {
		ctx := sinkCtx(0, 1)
		ctx.done = cancel
		w, err := textSink(path).CreateWriter(ctx)
		opened <- result{w, err}
	}()
	select {
	case r := <-opened:
		t.Fatalf("CreateWriter returned %v without a reader", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	close(cancel)
	select {
	case r := <-opened:
		if r.err == nil || !strings.Contains(r.err.Error(), "canceled while waiting for a reader") {
			t.Fatalf("CreateWriter = %v after cancel", r.err)
		}
	case <-time.After(5 * time.Second):
		// On failure, be the reader the open waits for, so the test ends.
		if f, err := os.Open(path); err == nil {
			f.Close()
		}
		t.Fatal("CreateWriter still waits for a reader 5s after cancel")
	}

	// A reader that comes late is written to.
	go func() {
		w, err := textSink(path).CreateWriter(sinkCtx(0, 1))
		opened <- result{w, err}
	}()
	time.Sleep(50 * time.Millisecond)
	got := readAllAsync(path)
	r := <-opened
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.w.Write("late", 0)
	if err := r.w.Flush(true); err != nil {
		t.Fatal(err)
	}
	r.w.Close()
	if s := <-got; s != "late\n" {
		t.Fatalf("the reader got %q", s)
	}
}

// readAllAsync opens path (waiting for a writer if it is a FIFO) and sends
// everything read from it, or the error.
func readAllAsync(path string) <-chan string {
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	return got
}
