package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
)

// Files is a two-phase-commit sink of numbers, one per line, into Dir:
// each subtask writes a hidden pending file (".pending-..."), hands it over
// at a checkpoint barrier (pre-commit) and the committer renames it to a
// visible "part-..." file once the checkpoint is complete (commit). A
// reader that skips names starting with "." sees each number once.
type Files struct{ Dir string }

// Committable is what a checkpoint stores for each pending file.
type Committable struct{ Pending, Final string }

func (f Files) CommittableCodec() codec.Codec[Committable] { return codec.MustFor[Committable]() }

func (f Files) CreateWriter(ctx sink.Context) (sink.CommittingWriter[int64, Committable], error) {
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("files sink: %w", err)
	}
	// The run's start time keeps the names of this run's files apart from
	// those of earlier runs and attempts.
	return &writer{dir: f.Dir, prefix: fmt.Sprintf("%d-%d", time.Now().UnixNano(), ctx.Subtask())}, nil
}

func (f Files) CreateCommitter(sink.Context) (sink.Committer[Committable], error) {
	return committer{}, nil
}

// writer's methods run on its subtask's goroutine, never concurrently.
type writer struct {
	dir, prefix string
	seq         int
	name        string // the pending file being written, "" if none
	file        *os.File
	w           *bufio.Writer
}

func (w *writer) Write(v int64, _ int64) error {
	if w.file == nil {
		w.seq++
		w.name = fmt.Sprintf("%s-%d", w.prefix, w.seq)
		f, err := os.Create(filepath.Join(w.dir, ".pending-"+w.name))
		if err != nil {
			return fmt.Errorf("files sink: %w", err)
		}
		w.file, w.w = f, bufio.NewWriter(f)
	}
	_, err := fmt.Fprintln(w.w, v)
	return err
}

func (w *writer) Flush(bool) error {
	if w.w == nil {
		return nil
	}
	return w.w.Flush()
}

// PrepareCommit closes the pending file, durably, and hands it over: from
// now on the checkpoint owns it. The next record starts a new file.
func (w *writer) PrepareCommit() ([]Committable, error) {
	if w.file == nil {
		return nil, nil
	}
	if err := w.w.Flush(); err != nil {
		return nil, err
	}
	if err := w.file.Sync(); err != nil {
		return nil, err
	}
	if err := w.file.Close(); err != nil {
		return nil, err
	}
	c := Committable{Pending: filepath.Join(w.dir, ".pending-"+w.name), Final: filepath.Join(w.dir, "part-"+w.name)}
	w.file, w.w, w.name = nil, nil, ""
	return []Committable{c}, nil
}

// Close removes a pending file no checkpoint has taken over: after a
// failure, its records are written again from the restored position.
func (w *writer) Close() error {
	if w.file == nil {
		return nil
	}
	w.file.Close()
	return os.Remove(w.file.Name())
}

type committer struct{}

// Commit renames pending files into place. It is idempotent, as the
// contract requires: a file already renamed is committed.
func (committer) Commit(cs []Committable) error {
	for _, c := range cs {
		err := os.Rename(c.Pending, c.Final)
		if errors.Is(err, fs.ErrNotExist) {
			if _, statErr := os.Stat(c.Final); statErr == nil {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("files sink: committing %s: %w", c.Final, err)
		}
	}
	return nil
}

func (committer) Close() error { return nil }

// committed reads the numbers of the committed files of dir.
func committed(dir string) (map[int64]int, int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	seen := map[int64]int{}
	files := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") {
			continue
		}
		files++
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var v int64
			if _, err := fmt.Sscan(sc.Text(), &v); err != nil {
				f.Close()
				return nil, 0, fmt.Errorf("%s: %w", e.Name(), err)
			}
			seen[v]++
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, 0, err
		}
	}
	return seen, files, nil
}
