package file

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirhq/weir/internal/operator"
)

// TextSink writes one line per record. At parallelism 1 it writes the file
// Path; otherwise Path is a directory holding part-<subtask> files. Files are
// written under a temporary name and renamed when the input ends, so a
// failed job leaves no file that looks complete.
type TextSink[T any] struct {
	Path   string
	Format func(T) string
}

// NewWriter implements the sink contract.
func (s TextSink[T]) NewWriter() operator.SinkWriter[T] { return &textWriter[T]{sink: s} }

type textWriter[T any] struct {
	sink      TextSink[T]
	f         *os.File
	w         *bufio.Writer
	tmp, dest string
}

func (w *textWriter[T]) Open(ctx *operator.Context) error {
	w.dest = w.sink.Path
	if ctx.Parallelism > 1 {
		if err := os.MkdirAll(w.sink.Path, 0o755); err != nil {
			return fmt.Errorf("file sink: %w", err)
		}
		w.dest = filepath.Join(w.sink.Path, fmt.Sprintf("part-%d", ctx.Subtask))
	} else if dir := filepath.Dir(w.dest); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("file sink: %w", err)
		}
	}
	w.tmp = filepath.Join(filepath.Dir(w.dest), "."+filepath.Base(w.dest)+".inprogress")
	f, err := os.Create(w.tmp)
	if err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	w.f, w.w = f, bufio.NewWriterSize(f, 256<<10)
	return nil
}

func (w *textWriter[T]) Write(v T, _ int64) error {
	w.w.WriteString(w.sink.Format(v))
	return w.w.WriteByte('\n')
}

func (w *textWriter[T]) Finish() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("file sink: writing %s: %w", w.tmp, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	w.f = nil
	if err := os.Rename(w.tmp, w.dest); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	return nil
}

func (w *textWriter[T]) Close() error {
	if w.f != nil { // not finished: the job failed or was canceled
		w.f.Close()
		os.Remove(w.tmp)
		w.f = nil
	}
	return nil
}
