package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/weirhq/weir/sink"
)

// TextSink writes one line per record.
//
// At parallelism 1 it writes Path, which is one of:
//   - "-": standard output (Stdout), written directly;
//   - a FIFO or a character device (such as /dev/stdout): opened and written
//     directly;
//   - a file, existing or not (missing directories are created): written
//     under a hidden temporary name next to it (".<name>.inprogress") and
//     renamed onto it when the input ends, so a failed job leaves neither a
//     file that looks complete nor the temporary file. When Path is a
//     symbolic link, the file it points to is written so, and the link stays
//     a link.
//
// At parallelism above 1, Path is a directory (created if missing) holding
// one file part-<subtask> per subtask, each written as above.
//
// TextSink is not exactly-once, and with checkpoints not even
// at-least-once: a job restored from a checkpoint writes its files anew
// from the restored position, so what the failed attempt wrote before the
// checkpoint is lost with its temporary file, and a direct output (standard
// output, a FIFO, a device) gets again what came after the checkpoint. Use
// Sink for output that is exact across failures.
type TextSink[T any] struct {
	Path string
	// Format turns a record into its line (nil: fmt.Sprint).
	Format func(T) string
	// Stdout is what Path "-" writes (nil: os.Stdout).
	Stdout io.Writer
}

// Validate reports whether the sink can write its output at the given
// parallelism, before the job starts; it creates nothing. At parallelism 1
// the output must not be a directory; above 1 it must be a directory or not
// exist, and "-" is not allowed. Directories that would have to be created
// must be creatable, and the directory the output is written in writable.
func (s TextSink[T]) Validate(parallelism int) error { return s.validate(parallelism, -1) }

// validate is Validate for the part file of one subtask (-1: all of them).
func (s TextSink[T]) validate(parallelism, subtask int) error {
	if s.Path == "" {
		return errors.New("output path is empty")
	}
	if s.Path == "-" {
		if parallelism > 1 {
			return fmt.Errorf("output - (standard output) takes one writer, but the sink has parallelism %d; set its parallelism to 1", parallelism)
		}
		return nil
	}
	if parallelism > 1 {
		st, err := os.Stat(s.Path)
		if err != nil {
			return checkDir(s.Path, s.Path)
		}
		if !st.IsDir() {
			return fmt.Errorf("output %s is not a directory; at parallelism %d the output is a directory of part files, one per subtask (or set the sink's parallelism to 1 to write one file)", s.Path, parallelism)
		}
		for i := range parallelism {
			if subtask >= 0 && i != subtask {
				continue
			}
			part := partFile(s.Path, i)
			dest, err := resolve(part)
			if err != nil {
				return err
			}
			if err := checkDest(part, dest); err != nil {
				return err
			}
		}
		return nil
	}
	dest, err := resolve(s.Path)
	if err != nil {
		return err
	}
	return checkDest(s.Path, dest)
}

// checkDest checks the file dest that output (at parallelism 1) or one of
// its part files resolves to.
func checkDest(output, dest string) error {
	st, err := os.Stat(dest)
	switch {
	case err == nil && st.IsDir():
		if output == dest {
			return fmt.Errorf("output %s is a directory; give a file path (or a directory with parallelism above 1)", output)
		}
		return fmt.Errorf("output %s (%s) is a directory; give a file path (or a directory with parallelism above 1)", output, dest)
	case err == nil && !st.Mode().IsRegular():
		return nil // a FIFO or device, written directly
	}
	return checkDir(output, dirOf(dest))
}

// checkDir checks that dir exists as a directory output can be written in,
// or can be created.
func checkDir(output, dir string) error {
	dir = strings.TrimSuffix(dir, string(filepath.Separator)) // as shown; no lexical cleaning
	if dir == "" {
		dir = string(filepath.Separator)
	}
	for d := dir; ; {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("output %s: cannot create directory %s: %s is not a directory", output, dir, d)
			}
			if err := writable(d); err != nil {
				if d == dir {
					return fmt.Errorf("output %s: cannot write in directory %s: %v", output, d, err)
				}
				return fmt.Errorf("output %s: cannot create directory %s in %s: %v", output, dir, d, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("output %s: %v", output, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("output %s: %v", output, err)
		}
		d = parent
	}
}

// dirOf is the directory of path as written (path/filepath.Dir would clean
// "link/.." lexically, which is wrong when link is a symbolic link).
func dirOf(path string) string {
	dir, _ := filepath.Split(path)
	if dir == "" {
		return "."
	}
	return dir
}

// resolve follows path while it is a symbolic link and returns the path of
// the file it ends at, which need not exist.
func resolve(path string) (string, error) {
	p := path
	for range 64 {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("output %s: %v", path, err)
		}
		if !filepath.IsAbs(target) {
			target = dirOf(p) + string(filepath.Separator) + target
		}
		p = target
	}
	return "", fmt.Errorf("output %s: too many levels of symbolic links", path)
}

// partFile is the file subtask i writes in the output directory dir.
func partFile(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("part-%d", i)) }

// CreateWriter implements sink.Sink: it checks the output of its subtask
// and opens it. Opening a FIFO waits for a reader, or until the subtask is
// canceled.
func (s TextSink[T]) CreateWriter(ctx sink.Context) (sink.Writer[T], error) {
	w := &textWriter[T]{format: s.Format}
	if w.format == nil {
		w.format = func(v T) string { return fmt.Sprint(v) }
	}
	if err := s.validate(ctx.Parallelism(), ctx.Subtask()); err != nil {
		return nil, err
	}
	path := s.Path
	if path == "-" {
		out := s.Stdout
		if out == nil {
			out = os.Stdout
		}
		w.dest, w.direct, w.w = "standard output", true, bufio.NewWriterSize(out, 64<<10)
		return w, nil
	}
	if ctx.Parallelism() > 1 {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, fmt.Errorf("output %s: %w", path, err)
		}
		path = partFile(path, ctx.Subtask())
	}
	dest, err := resolve(path)
	if err != nil {
		return nil, err
	}
	w.dest = dest
	if st, err := os.Stat(dest); err == nil && !st.Mode().IsRegular() {
		// A FIFO or a device. Opening a FIFO waits for a reader.
		f, err := openDirect(dest, ctx.Canceled())
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", path, err)
		}
		w.f, w.direct, w.w = f, true, bufio.NewWriterSize(f, 64<<10)
		return w, nil
	}
	dir, base := filepath.Split(dest)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("output %s: %w", path, err)
		}
	}
	w.tmp = dir + "." + base + ".inprogress"
	f, err := os.Create(w.tmp)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	w.f, w.w = f, bufio.NewWriterSize(f, 256<<10)
	return w, nil
}

type textWriter[T any] struct {
	format func(T) string
	w      *bufio.Writer
	f      *os.File // open until the end of input (nil for standard output)
	direct bool     // written in place: no temporary file, no rename
	dest   string   // the file written, for messages
	tmp    string   // the temporary file, when not direct
	done   bool     // the end of input was written
}

func (w *textWriter[T]) Write(v T, _ int64) error {
	w.w.WriteString(w.format(v))
	if err := w.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("file sink: writing %s: %w", w.dest, err)
	}
	return nil
}

// Flush hands buffered lines on to a direct output (standard output, a
// FIFO, a device), on the task's buffer timeout and at checkpoints, so
// whoever reads it sees them without waiting for the buffer to fill; a file
// is only written when the buffer is full. At the end of input a file is
// synced, closed and renamed into place.
func (w *textWriter[T]) Flush(endOfInput bool) error {
	if endOfInput {
		return w.finish()
	}
	if !w.direct || w.w.Buffered() == 0 {
		return nil
	}
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("file sink: writing %s: %w", w.dest, err)
	}
	return nil
}

func (w *textWriter[T]) finish() error {
	if w.done {
		return nil
	}
	if err := w.w.Flush(); err != nil {
		return w.fail(fmt.Errorf("file sink: writing %s: %w", w.dest, err))
	}
	if w.direct {
		if w.f != nil {
			err := w.f.Close()
			w.f = nil
			if err != nil {
				return fmt.Errorf("file sink: closing %s: %w", w.dest, err)
			}
		}
		w.done = true
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return w.fail(fmt.Errorf("file sink: writing %s: %w", w.dest, err))
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return w.fail(fmt.Errorf("file sink: writing %s: %w", w.dest, err))
	}
	if err := os.Rename(w.tmp, w.dest); err != nil {
		return w.fail(fmt.Errorf("file sink: cannot move the finished output into place: %w", err))
	}
	syncDir(dirOf(w.dest))
	w.done = true
	return nil
}

// fail discards what was written and returns err.
func (w *textWriter[T]) fail(err error) error {
	w.discard()
	return err
}

// discard closes the output and removes the temporary file, if any.
func (w *textWriter[T]) discard() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if w.tmp != "" {
		os.Remove(w.tmp)
		w.tmp = ""
	}
}

func (w *textWriter[T]) Close() error {
	if !w.done { // the job failed or was canceled before the end of input
		w.discard()
	}
	return nil
}
