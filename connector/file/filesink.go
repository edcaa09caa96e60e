package file

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/weirhq/weir/failure"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/source"
)

// DefaultRollSize is the size above which Sink begins a new part file
// between checkpoints, when RollSize is 0.
const DefaultRollSize = 128 << 20

// Sink writes one line per record into part files in a directory, exactly
// once across failures, with a two-phase commit (Flink's FileSink): it
// implements sink.TwoPhaseCommitting.
//
// Each subtask writes one part at a time under a hidden in-progress name
// (".<final name>.inprogress"). At every checkpoint barrier, and at the end
// of input, the part is flushed, synced and closed, and becomes a pending
// committable; nothing of it is visible yet. When the checkpoint completes
// the committable is committed: the part is renamed to its final name
// <Prefix>-<run>-<subtask>-<n><Suffix>, where run is random for each
// writer, so names never collide across restarts or across runs resumed
// from the same checkpoint; then the directory is synced. After a failure,
// the committables of the restored checkpoint are committed again: a
// part whose in-progress file is gone and whose final file exists was
// committed already. A part may also roll inside a checkpoint interval,
// when it grows above RollSize. A subtask that wrote nothing since the last
// checkpoint makes no part.
//
// Readers that skip names starting with "." or "_" (as TextSource does for
// directories) see only committed parts, each whole, and every record of a
// completed checkpoint exactly once. Without checkpoints, everything is
// committed at the end of input.
//
// In-progress files of failed attempts that no checkpoint holds are
// deleted once the new attempt's first part is committed (by then every
// subtask has committed what it restored): each subtask deletes those of
// its own subtask index, and subtask 0 those of indexes at or above the
// current parallelism, left by a run at a higher parallelism. A subtask
// that never commits a part leaves those of its index in place, and a
// writer closed after a failure deletes the parts it had not made pending.
//
// Dir, with Prefix and Suffix, must belong to one sink of one job: another
// writer of the same names there would have its in-progress files deleted.
// Committed files must stay (a restore may commit them again, and fails if
// a part is gone under both names).
type Sink[T any] struct {
	// Dir is the output directory, created if missing.
	Dir string
	// Format turns a record into its line (nil: fmt.Sprint).
	Format func(T) string
	// RollSize is the size in bytes above which a part is closed and the
	// next one begun before the next checkpoint (0: DefaultRollSize;
	// negative: parts roll at checkpoints only).
	RollSize int64
	// Prefix begins the names of the part files ("": "part"); it must not
	// start with "." or "_". Suffix ends them (".txt", say).
	Prefix, Suffix string
}

// Committable is a part file ready to be committed: the names, in the
// sink's directory, of its in-progress file and of the file it becomes.
type Committable struct {
	InProgress, Final string
}

func (s Sink[T]) prefix() string {
	if s.Prefix == "" {
		return "part"
	}
	return s.Prefix
}

// Validate reports whether the sink can write its output, before the job
// starts; it creates nothing. Dir may exist (as a directory) or not; its
// nearest existing ancestor must be writable.
func (s Sink[T]) Validate(parallelism int) error {
	if s.Dir == "" {
		return errors.New("output directory is empty")
	}
	if p := s.prefix(); strings.ContainsAny(p, `/\`) || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "_") {
		return fmt.Errorf("part file prefix %q: it must be a plain name that does not start with \".\" or \"_\" (readers skip such files)", p)
	}
	if strings.ContainsAny(s.Suffix, `/\`) {
		return fmt.Errorf("part file suffix %q: it must not contain a path separator", s.Suffix)
	}
	st, err := os.Stat(s.Dir)
	if err == nil && !st.IsDir() {
		return fmt.Errorf("output %s is not a directory; the exactly-once file sink writes a directory of part files (give a directory that exists or not)", s.Dir)
	}
	return checkDir(s.Dir, s.Dir)
}

// CommittableCodec implements sink.TwoPhaseCommitting.
func (s Sink[T]) CommittableCodec() codec.Codec[Committable] { return committableCodec{} }

// CreateWriter implements sink.TwoPhaseCommitting: it creates the
// directory if missing. Parts are created when records come.
func (s Sink[T]) CreateWriter(ctx sink.Context) (sink.CommittingWriter[T, Committable], error) {
	if err := s.Validate(ctx.Parallelism()); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("output %s: %w", s.Dir, err)
	}
	w := &partWriter[T]{
		dir: s.Dir, format: s.Format, roll: s.RollSize, prefix: s.prefix(), suffix: s.Suffix,
		subtask: ctx.Subtask(), parallelism: ctx.Parallelism(),
		run: fmt.Sprintf("%016x", rand.Uint64()),
	}
	if w.format == nil {
		w.format = func(v T) string { return fmt.Sprint(v) }
	}
	switch {
	case w.roll == 0:
		w.roll = DefaultRollSize
	case w.roll < 0:
		w.roll = 1<<63 - 1
	}
	return w, nil
}

// CreateCommitter implements sink.TwoPhaseCommitting.
func (s Sink[T]) CreateCommitter(sink.Context) (sink.Committer[Committable], error) {
	return committer{dir: s.Dir}, nil
}

// partWriter writes the parts of one subtask.
type partWriter[T any] struct {
	dir, prefix, suffix  string
	format               func(T) string
	roll                 int64
	subtask, parallelism int
	run                  string // random, names this writer's parts
	parts                int64  // parts begun

	// The open part.
	f    *os.File
	w    *bufio.Writer
	size int64
	cur  Committable

	rolled  []Committable // closed and synced, not prepared yet
	first   Committable   // the first part this writer made pending
	cleaned bool          // leftovers of earlier attempts were deleted
	err     error         // a failed write: every later call fails
}

func (w *partWriter[T]) Write(v T, _ int64) error {
	if w.f == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	line := w.format(v)
	w.w.WriteString(line)
	if err := w.w.WriteByte('\n'); err != nil {
		return w.fail(fmt.Errorf("file sink: writing %s: %w", filepath.Join(w.dir, w.cur.InProgress), err))
	}
	w.size += int64(len(line)) + 1
	if w.size >= w.roll {
		return w.closePart()
	}
	return nil
}

func (w *partWriter[T]) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// open begins the next part.
func (w *partWriter[T]) open() error {
	if w.err != nil {
		return w.err
	}
	w.cleanup()
	final := fmt.Sprintf("%s-%s-%d-%d%s", w.prefix, w.run, w.subtask, w.parts, w.suffix)
	w.parts++
	w.cur = Committable{InProgress: "." + final + ".inprogress", Final: final}
	f, err := os.OpenFile(filepath.Join(w.dir, w.cur.InProgress), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return w.fail(fmt.Errorf("file sink: %w", err))
	}
	w.f, w.size = f, 0
	if w.w == nil {
		w.w = bufio.NewWriterSize(f, 256<<10)
	} else {
		w.w.Reset(f)
	}
	return nil
}

// closePart flushes, syncs and closes the open part.
func (w *partWriter[T]) closePart() error {
	path := filepath.Join(w.dir, w.cur.InProgress)
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		os.Remove(path)
		return w.fail(fmt.Errorf("file sink: writing %s: %w", path, err))
	}
	w.rolled = append(w.rolled, w.cur)
	return nil
}

// Flush implements sink.Writer. Parts are written out at PrepareCommit.
func (w *partWriter[T]) Flush(bool) error { return w.err }

// PrepareCommit closes the open part and returns the parts closed since the
// last call, once their directory entries are durable.
func (w *partWriter[T]) PrepareCommit() ([]Committable, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.f != nil {
		if err := w.closePart(); err != nil {
			return nil, err
		}
	}
	w.cleanup()
	if len(w.rolled) == 0 {
		return nil, nil
	}
	if err := syncDir(w.dir); err != nil {
		return nil, w.fail(fmt.Errorf("file sink: syncing directory %s: %w", w.dir, err))
	}
	cs := w.rolled
	w.rolled = nil
	if w.first == (Committable{}) {
		w.first = cs[0]
	}
	return cs, nil
}

// Close deletes the open part and the parts not made pending (none are
// after the end of input), which no checkpoint holds.
func (w *partWriter[T]) Close() error {
	if w.f != nil {
		w.f.Close()
		w.f = nil
		os.Remove(filepath.Join(w.dir, w.cur.InProgress))
	}
	for _, c := range w.rolled {
		os.Remove(filepath.Join(w.dir, c.InProgress))
	}
	w.rolled = nil
	w.cleanup()
	return nil
}

// cleanup deletes the in-progress files of earlier attempts, once this
// writer's first pending part was committed: that happens only when a
// checkpoint taken by this attempt completed (or at the end of a job
// without checkpoints), and before a subtask takes part in a checkpoint it
// has committed every committable it restored, so no checkpoint that can
// still be restored holds them. Failures to delete are ignored: the files
// are only garbage.
func (w *partWriter[T]) cleanup() {
	if w.cleaned || w.first == (Committable{}) {
		return
	}
	if _, err := os.Lstat(filepath.Join(w.dir, w.first.InProgress)); !errors.Is(err, fs.ErrNotExist) {
		return // not committed yet
	}
	w.cleaned = true
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		run, subtask, ok := parseInProgress(e.Name(), w.prefix, w.suffix)
		if !ok || run == w.run {
			continue
		}
		if subtask == w.subtask || (w.subtask == 0 && subtask >= w.parallelism) {
			os.Remove(filepath.Join(w.dir, e.Name()))
		}
	}
}

// parseInProgress returns the run and subtask of the in-progress part file
// called name, if it is one of a sink with this prefix and suffix.
func parseInProgress(name, prefix, suffix string) (run string, subtask int, ok bool) {
	rest, ok1 := strings.CutPrefix(name, "."+prefix+"-")
	rest, ok2 := strings.CutSuffix(rest, suffix+".inprogress")
	if !ok1 || !ok2 {
		return "", 0, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 || len(f[0]) != 16 || strings.Trim(f[0], "0123456789abcdef") != "" {
		return "", 0, false
	}
	sub, err1 := strconv.ParseUint(f[1], 10, 31)
	_, err2 := strconv.ParseUint(f[2], 10, 63)
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return f[0], int(sub), true
}

// committer renames pending parts to their final names.
type committer struct{ dir string }

// Commit renames every part into place, then syncs the directory. A part
// whose in-progress file is gone while its final file exists was committed
// before.
func (c committer) Commit(cs []Committable) error {
	for _, cm := range cs {
		if !validPartName(cm.InProgress) || !validPartName(cm.Final) || !strings.HasPrefix(cm.InProgress, ".") {
			return fmt.Errorf("file sink: corrupt committable %+v", cm)
		}
		from, to := filepath.Join(c.dir, cm.InProgress), filepath.Join(c.dir, cm.Final)
		err := os.Rename(from, to)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return fmt.Errorf("file sink: committing %s: %w", to, err)
			}
			continue
		}
		if _, serr := os.Lstat(to); serr == nil {
			continue // committed before
		}
		if _, serr := os.Lstat(from); serr == nil {
			return fmt.Errorf("file sink: committing %s: %w", to, err)
		}
		// Restarting cannot bring the data back: fail the job for good.
		return failure.Permanent(fmt.Errorf("file sink: cannot commit %s: neither it nor its in-progress file %s exists (were files deleted from the output directory, is it another directory than the checkpoint's job wrote to, or does another job write there?)", to, cm.InProgress))
	}
	if len(cs) > 0 {
		if err := syncDir(c.dir); err != nil {
			return fmt.Errorf("file sink: syncing directory %s: %w", c.dir, err)
		}
	}
	return nil
}

func (c committer) Close() error { return nil }

// validPartName reports whether name is a file name of the directory itself.
func validPartName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

// committableCodec encodes a Committable as the version byte and its two
// names (uvarint length and bytes each).
type committableCodec struct{}

func (committableCodec) AppendEncode(dst []byte, c Committable) []byte {
	dst = append(dst, formatVersion)
	for _, s := range [...]string{c.InProgress, c.Final} {
		dst = appendString(dst, s)
	}
	return dst
}

func (committableCodec) Decode(src []byte) (Committable, int, error) {
	d := decoder{b: src}
	if v := d.byte(); d.err == nil && v != formatVersion {
		return Committable{}, 0, fmt.Errorf("%w: file sink committable version %d, want %d", codec.ErrCorrupt, v, formatVersion)
	}
	c := Committable{InProgress: d.string(), Final: d.string()}
	if d.err != nil {
		return Committable{}, 0, d.err
	}
	return c, d.n, nil
}

// The sinks and sources implement their contracts.
var (
	_ sink.TwoPhaseCommitting[string, Committable] = Sink[string]{}
	_ sink.Sink[string]                            = TextSink[string]{}
	_ source.Source[string, Split]                 = TextSource{}
	_ source.Source[Line, Split]                   = LineSource{}
)
