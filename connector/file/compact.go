package file

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirhq/weir/failure"
)

// The defaults of Sink's compaction policy.
const (
	// DefaultCompactSize is CompactPolicy.SmallerThan when it is 0.
	DefaultCompactSize = 16 << 20
	// DefaultCompactCheckpoints is CompactPolicy.MaxCheckpoints when it is 0.
	DefaultCompactCheckpoints = 10
)

// CompactPolicy makes Sink concatenate small part files into larger ones
// before they become visible (Flink's FileSink.enableCompact with a
// FileCompactStrategy and a concatenating compactor).
//
// A part that rolls smaller than SmallerThan is held back, hidden. The
// parts a subtask holds form a group, and every checkpoint records the
// group (one committable with Held set, its final name and its parts)
// instead of committing them. The group is compacted at the checkpoint
// where its total size reaches SmallerThan, or at the MaxCheckpoints-th
// checkpoint that recorded it, or at the end of input: the writer
// concatenates its parts, at that barrier, into one hidden file
// ".<final>.compact-<checkpoint>", and the checkpoint's completion renames
// it to its final name (chosen when the group began) and then deletes the
// parts. A group of one part is committed as it is. A compacted part holds
// less than twice SmallerThan.
//
// Readers see each record once, in a whole file, and a record of a held
// part only once its group is compacted: held parts delay visibility by up
// to MaxCheckpoints checkpoints. Compaction costs nothing per record; the
// copy happens at the barrier, on the task's goroutine.
//
// A restore finishes restored compactions (renames, then deletes the
// parts; a final name that exists was committed before). A group still
// held at the restored checkpoint is recorded there whole, as one
// committable, so whichever subtask restores it, at any parallelism,
// compacts it at once the same way (or deletes its parts if its final name
// exists); the group's records of earlier checkpoints, restored too, are
// superseded by it or by a compaction. A compaction file of a checkpoint
// that did not complete is deleted with the other in-progress files of
// failed attempts. When the task ends, the writer compacts its held group
// as its last checkpoint recorded it, and if that checkpoint completed (a
// stop with a savepoint) the committer commits it, so a stopped job's
// output is whole; otherwise the restore commits it.
type CompactPolicy struct {
	// SmallerThan is the size in bytes below which a rolled part is held
	// for compaction, and the total at which a group is compacted
	// (0: DefaultCompactSize; negative: every part is held, and groups are
	// compacted on MaxCheckpoints only).
	SmallerThan int64
	// MaxCheckpoints is how many checkpoints record a group at most before
	// it is compacted at the last of them (1: at the checkpoint its first
	// part was recorded at; 0: DefaultCompactCheckpoints; negative: no
	// bound, groups are compacted on SmallerThan or at the end of input).
	MaxCheckpoints int
}

// validate reports a policy that would hold parts until the end of input.
func (p *CompactPolicy) validate() error {
	if p != nil && p.SmallerThan < 0 && p.MaxCheckpoints < 0 {
		return errors.New("file sink compaction: SmallerThan and MaxCheckpoints are both negative (unbounded), so small parts would stay hidden until the end of input: bound one of them")
	}
	return nil
}

// compactFault, when set (by tests), is called between the steps of a
// compaction; an error stops it there, as a crash would.
var compactFault func(step string) error

func fault(step string) error {
	if compactFault == nil {
		return nil
	}
	if err := compactFault(step); err != nil {
		return injected{err}
	}
	return nil
}

// injected is an error of compactFault: a crash, which nothing handles.
type injected struct{ error }

func (e injected) Unwrap() error { return e.error }

// compacting is the writer's side of a compaction policy.
type compacting struct {
	small          int64 // parts below this size are held; a group this big is compacted
	maxCheckpoints int
	group          *compactGroup // the parts held, or nil
}

// compactGroup is a group of held parts.
type compactGroup struct {
	target      string  // the final name of the compacted part
	sources     []*part // closed, synced
	size        int64
	checkpoints int // checkpoints that recorded the group
}

func newCompacting(p *CompactPolicy) *compacting {
	if p == nil {
		return nil
	}
	return &compacting{
		small:          limit(p.SmallerThan, DefaultCompactSize),
		maxCheckpoints: int(limit(int64(p.MaxCheckpoints), DefaultCompactCheckpoints)),
	}
}

// prepareCompaction returns the committables of the parts rolled since the
// last checkpoint: large parts as they are, small ones held in the group,
// and the group compacted when it is due.
func (w *partWriter[T]) prepareCompaction(rolled []*part) ([]Committable, error) {
	k := w.compact
	var cs []Committable
	for _, p := range rolled {
		if p.size >= k.small {
			cs = append(cs, w.closed(p))
			continue
		}
		if k.group == nil {
			k.group = &compactGroup{target: w.nextName()}
		}
		k.group.sources = append(k.group.sources, p)
		k.group.size += p.size
		if k.group.size >= k.small {
			c, err := w.compactGroup()
			if err != nil {
				return nil, err
			}
			cs = append(cs, c)
		}
	}
	g := k.group
	if g == nil {
		return cs, nil
	}
	g.checkpoints++
	if w.end || g.checkpoints >= k.maxCheckpoints {
		c, err := w.compactGroup()
		if err != nil {
			return nil, err
		}
		return append(cs, c), nil
	}
	c := g.committable(w.dir, w.checkpoint)
	c.Held = true
	return append(cs, c), nil
}

// committable is the group's committable at checkpoint cp: the
// compaction it is, or will be.
func (g *compactGroup) committable(dir string, cp int64) Committable {
	c := Committable{InProgress: compactionName(g.target, cp), Final: g.target, Dir: dir, Checkpoint: cp}
	for _, p := range g.sources {
		c.Sources = append(c.Sources, p.c.InProgress)
	}
	return c
}

// closed is the committable of the closed part p at this checkpoint.
func (w *partWriter[T]) closed(p *part) Committable {
	c := p.c
	c.Checkpoint = w.checkpoint
	return c
}

// compactGroup concatenates the group's parts into its compaction file and
// returns its committable; a group of one part is committed as it is.
func (w *partWriter[T]) compactGroup() (Committable, error) {
	g := w.compact.group
	w.compact.group = nil
	if len(g.sources) == 1 {
		return w.closed(g.sources[0]), nil
	}
	c := g.committable(w.dir, w.checkpoint)
	if err := concat(w.dir, c.InProgress, c.Sources); err != nil {
		return Committable{}, w.fail(err)
	}
	return c, nil
}

// concat writes the files sources of dir, one after the other, into the
// file name there (replacing what it holds) and syncs it.
func concat(dir, name string, sources []string) error {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("file sink: compacting small parts: %w", err)
	}
	for i, src := range sources {
		if err = appendFile(f, filepath.Join(dir, src)); err != nil {
			break
		}
		if i == 0 {
			if err := fault("copied"); err != nil {
				f.Close() // left partial, as a crash would leave it
				return err
			}
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("file sink: compacting %d small parts into %s: %w", len(sources), path, err)
	}
	return nil
}

// appendFile appends the content of the file at path to f.
func appendFile(f *os.File, path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(f, src)
	return err
}

// compactionName is the hidden name of the file that compacts parts into
// the part final, written at checkpoint cp.
func compactionName(final string, cp int64) string {
	return "." + final + ".compact-" + strconv.FormatInt(cp, 10)
}

// parseCompaction returns the final name and checkpoint of a compaction
// file name, if it is one.
func parseCompaction(name string) (final string, cp int64, ok bool) {
	i := strings.LastIndex(name, ".compact-")
	if i < 1 || name[0] != '.' {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+len(".compact-"):], 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return name[1:i], n, true
}

// compactions lists the compaction files of dir: the checkpoints each
// target's were written at. Read before checking the targets' final
// names: a compaction file is renamed to its target, never back.
func compactions(dir string) (map[string][]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("file sink: reading output directory %s: %w", dir, err)
	}
	out := map[string][]int64{}
	for _, e := range entries {
		if final, cp, ok := parseCompaction(e.Name()); ok {
			out[final] = append(out[final], cp)
		}
	}
	return out, nil
}

// compactionBegun reports whether a compaction into target in dir was
// pre-committed or committed. files is compactions(dir), read before.
func compactionBegun(dir, target string, files map[string][]int64) (bool, error) {
	if len(files[target]) > 0 {
		return true, nil
	}
	return exists(filepath.Join(dir, target))
}

func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("file sink: %w", err)
}

// restoredGroup turns cm, a group held at the restored checkpoint, into
// the compaction that commits it: it concatenates the parts still in
// progress into cm.InProgress, unless cm.Final exists (compacted before).
// The result is the same whenever it runs, so a crash in it is mended by
// the next restore. A part gone whose own final name exists was committed
// as it is (skipped); one gone under both names is a permanent error. ok
// is false if nothing is left to commit.
func restoredGroup(dir string, cm Committable) (_ Committable, ok bool, err error) {
	cm.Held = false
	if done, err := exists(filepath.Join(dir, cm.Final)); err != nil || done {
		return cm, done, err
	}
	var left []string
	for _, src := range cm.Sources {
		in, err := exists(filepath.Join(dir, src))
		if err != nil {
			return cm, false, err
		}
		if in {
			left = append(left, src)
			continue
		}
		final := strings.TrimSuffix(strings.TrimPrefix(src, "."), ".inprogress")
		if out, err := exists(filepath.Join(dir, final)); err != nil || !out {
			if err == nil {
				err = failure.Permanent(fmt.Errorf("file sink: cannot compact the held part %s into %s: neither it nor %s exists (were files deleted from the output directory, or does another job write there?)", src, cm.Final, final))
			}
			return cm, false, err
		}
	}
	if len(left) == 0 {
		return cm, false, nil
	}
	if err := concat(dir, cm.InProgress, left); err != nil {
		return cm, false, err
	}
	return cm, true, nil
}

// deleteSources deletes the held parts a committed compaction cm took.
// Failures are ignored: the files are hidden garbage, deleted again by a
// later restore or the cleanup of failed attempts.
func deleteSources(dir string, cm Committable) error {
	for i, s := range cm.Sources {
		os.Remove(filepath.Join(dir, s))
		if i == 0 {
			if err := fault("deleted"); err != nil {
				return err
			}
		}
	}
	return nil
}
