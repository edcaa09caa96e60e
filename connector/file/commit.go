package file

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weirhq/weir/failure"
)

// committer commits the parts of one sink subtask: it renames closed parts
// into place, cuts and renames open parts restored from a checkpoint, and
// keeps the directory's commit marker of its subtask index.
type committer struct {
	dir, prefix, suffix string // dir is absolute
	log                 *slog.Logger
	subtask             int
	parallelism         int
	lineage             string // "": no markers
	restored            int64  // the restored checkpoint (0: fresh start)
	checkpointing       bool

	// open holds this run's open parts as the last completed checkpoint
	// recorded them, by in-progress name: Close commits those still of
	// that length.
	open map[string]Committable
	// held holds this run's held groups of small parts (see
	// CompactPolicy) as the last completed checkpoint recorded them, by
	// final name, until their compaction commits: Close commits those the
	// writer compacted as that checkpoint recorded them.
	held    map[string]Committable
	cleaned bool  // in-progress files of earlier runs were deleted
	broken  error // another lineage took the directory: commit nothing more
}

// restoredOne reports whether c came from the restored checkpoint rather
// than from this run (whose checkpoints are above it).
func (c *committer) restoredOne(cm Committable) bool {
	return c.restored > 0 && cm.Checkpoint <= c.restored
}

// Commit commits cs. Closed parts are renamed to their final names; an
// open part of this run is left open (its part rolls and is committed
// later); an open part restored from the checkpoint is cut to its recorded
// length and renamed. A part whose in-progress file is gone while its final
// file exists was committed before. Restored parts of another directory
// (the job was resumed into a new Dir) are committed in the sink's
// directory if it holds them (the output was moved or copied along), else
// finished in theirs, or discarded.
func (c *committer) Commit(cs []Committable) error {
	if c.broken != nil {
		return c.broken
	}
	var own []Committable
	other := map[string][]Committable{}
	var current *Committable
	for i := range cs {
		cm := cs[i]
		if !validCommittable(cm) {
			return fmt.Errorf("file sink: corrupt committable %+v", cm)
		}
		if cm.Dir == "" {
			cm.Dir = c.dir
		}
		if !c.restoredOne(cm) {
			current = &cs[i]
		}
		switch {
		case cm.Dir == c.dir || (c.restoredOne(cm) && c.holds(cm)):
			own = append(own, cm)
		case c.restoredOne(cm):
			other[cm.Dir] = append(other[cm.Dir], cm)
		default:
			return fmt.Errorf("file sink: committable %+v of this run names directory %s, not the sink's %s", cm, cm.Dir, c.dir)
		}
	}
	if err := c.commitOwn(own); err != nil {
		return err
	}
	for _, dir := range slices.Sorted(maps.Keys(other)) {
		if err := c.finishElsewhere(dir, other[dir]); err != nil {
			return err
		}
	}
	if current != nil && (!c.checkpointing || c.restored < current.Checkpoint) {
		c.cleanup(current.Final)
	}
	return nil
}

// validCommittable reports whether cm names files of its directory and
// is of one kind: open, closed, a compaction or a held group.
func validCommittable(cm Committable) bool {
	ok := validPartName(cm.InProgress) && validPartName(cm.Final) && strings.HasPrefix(cm.InProgress, ".") &&
		(cm.Dir == "" || filepath.IsAbs(cm.Dir)) && (!cm.Open || cm.Length >= 0) &&
		(!cm.Held || len(cm.Sources) > 0) && (!cm.Open || len(cm.Sources) == 0)
	for _, src := range cm.Sources {
		ok = ok && validPartName(src) && strings.HasPrefix(src, ".") && strings.HasSuffix(src, ".inprogress")
	}
	return ok
}

// holds reports whether the sink's directory holds the part cm of another
// directory, in progress or committed: the output was moved or copied
// there with the checkpoint's parts, which are then committed there.
func (c *committer) holds(cm Committable) bool {
	for _, n := range [...]string{cm.InProgress, cm.Final} {
		if _, err := os.Lstat(filepath.Join(c.dir, n)); err == nil {
			return true
		}
	}
	return false
}

// commitOwn commits committables of the sink's directory.
func (c *committer) commitOwn(cs []Committable) error {
	var todo []Committable
	floor := int64(0)
	for _, cm := range cs {
		restored := c.restoredOne(cm)
		// A part a group took (held or compacted) is no longer an open
		// part: the group commits it, under the group's final name, and
		// Close must not commit it under its own.
		for _, src := range cm.Sources {
			delete(c.open, src)
		}
		switch {
		case cm.Open && !restored:
			if prev, ok := c.open[cm.InProgress]; !ok || prev.Checkpoint < cm.Checkpoint {
				c.open[cm.InProgress] = cm
			}
			continue
		case cm.Open && cm.Checkpoint < c.restored:
			// The restored checkpoint holds a later entry of this part (an
			// open part is recorded at every checkpoint, a rolled one as
			// closed); committing this one would cut records it holds.
			continue
		case cm.Held && !restored:
			if prev, ok := c.held[cm.Final]; !ok || prev.Checkpoint < cm.Checkpoint {
				c.held[cm.Final] = cm
			}
			continue
		case cm.Held && cm.Checkpoint < c.restored:
			// The restored checkpoint recorded the group again (held, or
			// compacted at it or before): that entry commits it.
			continue
		case cm.Held:
			g, ok, err := restoredGroup(c.dir, cm)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			cm = g
		}
		delete(c.open, cm.InProgress)
		if len(cm.Sources) > 0 {
			delete(c.held, cm.Final)
		}
		todo = append(todo, cm)
		cp := cm.Checkpoint
		if restored {
			cp = c.restored
		}
		floor = max(floor, cp)
	}
	if len(todo) == 0 {
		return nil
	}
	if err := c.raiseFloor(c.dir, floor, true); err != nil {
		return err
	}
	for _, cm := range todo {
		if err := commitPart(c.dir, cm); err != nil {
			return err
		}
	}
	if err := syncDir(c.dir); err != nil {
		return fmt.Errorf("file sink: syncing directory %s: %w", c.dir, err)
	}
	// The compacted parts are durable under their final names: their
	// sources can go.
	for _, cm := range todo {
		if len(cm.Sources) > 0 {
			if err := fault("renamed"); err != nil {
				return err
			}
			if err := deleteSources(c.dir, cm); err != nil {
				return err
			}
		}
	}
	return nil
}

// raiseFloor records in dir's marker of this subtask index that
// checkpoint cp committed parts, before they are renamed, so that a
// restore from below it is refused even if the renames are cut short.
// With strict, a marker of another lineage stops this committer for good.
func (c *committer) raiseFloor(dir string, cp int64, strict bool) error {
	if c.lineage == "" {
		return nil
	}
	m, err := readMarker(dir, c.subtask)
	if err != nil {
		return err
	}
	if m != nil && m.Lineage != c.lineage && strict {
		c.broken = failure.Permanent(fmt.Errorf("file sink: output directory %s was taken by another run of a job (lineage %s, marker %s) while this one (lineage %s) wrote there; this run commits nothing more: give each job its own output directory",
			dir, m.Lineage, markerPath(dir, c.subtask), c.lineage))
		return c.broken
	}
	if m != nil && m.Lineage == c.lineage && m.Checkpoint >= cp {
		return nil
	}
	return writeMarker(dir, c.subtask, c.lineage, cp)
}

// commitPart renames the part cm into place in dir, cut to its recorded
// length first if it is open.
func commitPart(dir string, cm Committable) error {
	from, to := filepath.Join(dir, cm.InProgress), filepath.Join(dir, cm.Final)
	if cm.Open {
		if err := cut(from, cm.Length); err != nil {
			return err
		}
	}
	err := os.Rename(from, to)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		if err != nil {
			return fmt.Errorf("file sink: committing %s: %w", to, err)
		}
		return nil
	}
	if _, serr := os.Lstat(to); serr == nil {
		return nil // committed before
	}
	if _, serr := os.Lstat(from); serr == nil {
		return fmt.Errorf("file sink: committing %s: %w", to, err)
	}
	// Restarting cannot bring the data back: fail the job for good.
	return failure.Permanent(fmt.Errorf("file sink: cannot commit %s: neither it nor its in-progress file %s exists (were files deleted from the output directory, is it another directory than the checkpoint's job wrote to, or does another job write there?)", to, cm.InProgress))
}

// cut truncates the in-progress file path to length and syncs it; a file
// gone is left to the rename (committed before, or lost).
func cut(path string, length int64) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	switch {
	case st.Size() < length:
		return failure.Permanent(fmt.Errorf("file sink: in-progress part %s holds %d bytes, fewer than the %d its checkpoint recorded: it lost records (was it changed, or is the storage not durable?)", path, st.Size(), length))
	case st.Size() == length:
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		err = f.Truncate(length)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("file sink: cutting %s to the %d bytes its checkpoint recorded: %w", path, length, err)
	}
	return nil
}

// finishElsewhere finishes restored commits of dir, the output directory
// of the run that took the restored checkpoint, now that this run writes
// elsewhere: if dir is gone, or holds another lineage's output, or its
// lineage committed a later checkpoint there (the job ran on after the
// savepoint), they are discarded; else closed parts are renamed and open
// ones copied, cut to their recorded length, to their final names (the
// in-progress file stays: a job still running there may be writing it).
// What it did goes to the log; failures there only warn, since the
// output of this run is elsewhere. It returns only the crashes tests
// inject (see compactFault).
func (c *committer) finishElsewhere(dir string, cs []Committable) error {
	log := c.log.With("old output", dir, "output", c.dir, "checkpoint", c.restored, "subtask", c.subtask, "parts", len(cs))
	if _, err := os.Stat(dir); err != nil {
		log.Warn("file sink: resumed into another output directory; the previous one is gone, so its pending commits are discarded", "error", err)
		return nil
	}
	if c.lineage != "" {
		ms, err := readMarkers(dir)
		if err != nil {
			log.Warn("file sink: resumed into another output directory; the pending commits of the previous one are discarded", "error", err)
			return nil
		}
		for _, m := range ms {
			if m.Lineage != c.lineage {
				log.Warn("file sink: resumed into another output directory; the previous one now holds another job's output, so its pending commits are discarded", "lineage", m.Lineage)
				return nil
			}
			if m.Checkpoint > c.restored {
				log.Info("file sink: resumed into another output directory; the previous one's job committed a later checkpoint there, so the pending commits are left to it", "committed", m.Checkpoint)
				return nil
			}
		}
		if err := c.raiseFloor(dir, c.restored, false); err != nil {
			log.Warn("file sink: resumed into another output directory; the pending commits of the previous one are discarded", "error", err)
			return nil
		}
	}
	n := 0
	var compacted []Committable
	for _, cm := range cs {
		var err error
		switch {
		case (cm.Open || cm.Held) && cm.Checkpoint < c.restored:
			continue // superseded, see commitOwn
		case cm.Open:
			err = copyPrefix(dir, cm)
		case cm.Held:
			var ok bool
			if cm, ok, err = restoredGroup(dir, cm); err == nil && !ok {
				continue
			}
			if err == nil {
				err = commitPart(dir, cm)
			}
			if err == nil {
				compacted = append(compacted, cm)
			}
		default:
			err = commitPart(dir, cm)
			if err == nil && len(cm.Sources) > 0 {
				compacted = append(compacted, cm)
			}
		}
		if errors.As(err, new(injected)) {
			return err
		}
		if err != nil {
			log.Warn("file sink: finishing a pending commit in the previous output directory failed", "part", cm.Final, "error", err)
			continue
		}
		n++
	}
	if err := syncDir(dir); err != nil {
		log.Warn("file sink: syncing the previous output directory", "error", err)
	} else {
		for _, cm := range compacted {
			if err := deleteSources(dir, cm); err != nil {
				return err
			}
		}
	}
	log.Info("file sink: resumed into another output directory; finished the restored pending commits in the previous one", "committed", n)
	return nil
}

// copyPrefix commits an open part of dir as a copy of its first Length
// bytes under its final name, unless that exists.
func copyPrefix(dir string, cm Committable) error {
	to := filepath.Join(dir, cm.Final)
	if _, err := os.Lstat(to); err == nil {
		return nil // committed before
	}
	src, err := os.Open(filepath.Join(dir, cm.InProgress))
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.copy-%016x", cm.Final, rand.Uint64()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	_, err = io.CopyN(f, src, cm.Length)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// A link never replaces a final file a live job renamed meanwhile; a
	// file system without links gets a rename after a check.
	err = os.Link(tmp, to)
	switch {
	case err == nil || errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return err
	}
	if _, serr := os.Lstat(to); serr == nil {
		return nil
	}
	return os.Rename(tmp, to)
}

// cleanup deletes the in-progress files of earlier runs, once a
// checkpoint of this run completed (or at the end of a job without
// checkpoints): a subtask takes part in a checkpoint only after it
// committed every committable it restored, so no checkpoint that can still
// be restored holds them. Each subtask deletes those of its own index, and
// subtask 0 those of indexes at or above the parallelism. Failures to
// delete are ignored: the files are only garbage. mine is the final name
// of a part of this run. Compaction files count as in-progress files of
// their target's run.
func (c *committer) cleanup(mine string) {
	if c.cleaned {
		return
	}
	c.cleaned = true
	run, _, ok := parsePart(mine, c.prefix, c.suffix, false)
	if !ok {
		return
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		r, sub, ok := parsePart(e.Name(), c.prefix, c.suffix, true)
		if final, _, isCompaction := parseCompaction(e.Name()); isCompaction {
			r, sub, ok = parsePart(final, c.prefix, c.suffix, false)
		}
		if !ok || r == run {
			continue
		}
		if sub == c.subtask || (c.subtask == 0 && sub >= c.parallelism) {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
}

// Close commits this run's open parts that still have the length the last
// completed checkpoint recorded (the writer, closed first, cut them to
// their last recorded length): the task ends after a stop with a savepoint
// or a failure, and whatever restores next restores that checkpoint or a
// later one, which has written nothing more into the part, so its
// records are final. The output of a stopped job is whole.
//
// A later checkpoint may also have taken the part, rolled at that same
// length, into a compaction, and completed without this committer being
// told yet: committing the part under its own name too would show its
// records twice once the restore commits the compaction. The compaction
// file is on disk from its barrier until its commit, which this committer
// would have done, so an open part is left to the restore whenever a
// compaction file of its run is of a later checkpoint than the one that
// recorded the part.
func (c *committer) Close() error {
	if c.broken != nil || len(c.open)+len(c.held) == 0 {
		return nil
	}
	var errs []error
	later, err := c.laterCompactions()
	if err != nil {
		return err
	}
	n, err := c.closeHeld()
	if err != nil {
		errs = append(errs, err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.open)) {
		cm := c.open[name]
		if run, _, ok := parsePart(cm.Final, c.prefix, c.suffix, false); ok && later[run] > cm.Checkpoint {
			continue
		}
		st, err := os.Lstat(filepath.Join(c.dir, cm.InProgress))
		if err != nil || st.Size() != cm.Length {
			continue
		}
		if err := c.raiseFloor(c.dir, cm.Checkpoint, true); err != nil {
			return err
		}
		cm.Open = false
		if err := commitPart(c.dir, cm); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	c.open = map[string]Committable{}
	if n > 0 {
		if err := syncDir(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("file sink: syncing directory %s: %w", c.dir, err))
		}
	}
	return errors.Join(errs...)
}

// laterCompactions returns, by run, the latest checkpoint of the
// compaction files in the directory (see Close).
func (c *committer) laterCompactions() (map[string]int64, error) {
	files, err := compactions(c.dir)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for final, cps := range files {
		run, _, ok := parsePart(final, c.prefix, c.suffix, false)
		if !ok {
			continue
		}
		for _, cp := range cps {
			out[run] = max(out[run], cp)
		}
	}
	return out, nil
}

// closeHeld commits this run's held groups that the writer, closed
// first, compacted as the last completed checkpoint recorded them (see
// partWriter.Close): the writer's last checkpoint was that one, so
// whatever restores next restores it, where the group's final name shows
// the compaction done. A group of a later checkpoint, which may still
// complete, is left to the restore. It returns how many it committed.
func (c *committer) closeHeld() (int, error) {
	if len(c.held) == 0 {
		return 0, nil
	}
	held := c.held
	c.held = map[string]Committable{}
	files, err := compactions(c.dir)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, name := range slices.Sorted(maps.Keys(held)) {
		g := held[name]
		if !slices.Equal(files[g.Final], []int64{g.Checkpoint}) {
			continue
		}
		if err := c.raiseFloor(c.dir, g.Checkpoint, true); err != nil {
			return n, err
		}
		g.Held = false
		if err := commitPart(c.dir, g); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := syncDir(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("file sink: syncing directory %s: %w", c.dir, err))
			continue
		}
		deleteSources(c.dir, g)
		n++
	}
	return n, errors.Join(errs...)
}
