package file

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/source"
)

// The defaults of Sink's rolling policy, Flink's DefaultRollingPolicy's.
const (
	// DefaultRollSize is the size above which a part is closed (Flink's
	// maxPartSize), when RollSize is 0.
	DefaultRollSize = 128 << 20
	// DefaultRollInterval is how long a part stays open at most (Flink's
	// rolloverInterval), when RollInterval is 0.
	DefaultRollInterval = time.Minute
	// DefaultInactivityInterval is how long a part stays open without a
	// record (Flink's inactivityInterval), when InactivityInterval is 0.
	DefaultInactivityInterval = time.Minute
)

// Sink writes one line per record into part files in a directory, exactly
// once across failures, with a two-phase commit (Flink's FileSink): it
// implements sink.TwoPhaseCommitting.
//
// Each subtask writes one part at a time under a hidden in-progress name
// (".<final name>.inprogress"), <Prefix>-<run>-<subtask>-<n><Suffix> for
// the final one, where run is random for each writer, so names never
// collide across restarts or across runs resumed from the same checkpoint.
// A part stays open across checkpoints, as with Flink's row formats, and
// rolls (is closed) when it grows above RollSize, is older than
// RollInterval, or got no record for InactivityInterval; the times are
// checked at every flush (the buffer timeout) and checkpoint barrier. At
// every barrier the open part is flushed and synced and the checkpoint
// records its name and length (a committable with Open set); a restore
// cuts the file to that length and commits it, so a part resumed from a
// checkpoint holds exactly the records before the barrier. A part that
// rolled is committed when the next checkpoint completes: it is renamed to
// its final name, then the directory is synced. At the end of input every
// part is closed and committed. After a failure the committables of the
// restored checkpoint are committed again: a part whose in-progress file
// is gone and whose final file exists was committed already. When the
// task ends (a stop with a savepoint, a failure), an open part whose
// length is what the last completed checkpoint recorded is committed
// then, and so is a held group of small parts that checkpoint recorded
// (compacted), so a stopped job's output is whole.
//
// With Compact set, a part that rolls smaller than its threshold is not
// committed: it stays hidden, with the other small parts of the subtask,
// until they are concatenated into one part at a checkpoint barrier and
// that part is committed like a rolled one (see CompactPolicy). The cost is
// per checkpoint, none per record; the records of small parts become
// visible up to CompactPolicy.MaxCheckpoints checkpoints later.
//
// Readers that skip names starting with "." or "_" (as TextSource does for
// directories) see only committed parts, each whole, and every record of a
// completed checkpoint exactly once, once its part rolled (and, if it was
// small, was compacted). Without checkpoints, everything is committed (and
// small parts compacted) at the end of input.
//
// With checkpoints, the output directory is tied to the job's lineage
// (sink.Context.Lineage): each subtask keeps a hidden marker
// ".weir-commit-<subtask>" there with the lineage and the highest
// checkpoint whose parts it committed. A writer refuses to start (with a
// permanent error) when the directory holds the output of another lineage,
// when its own lineage committed a checkpoint above the one restored
// (resuming would write records twice), or when a fresh start finds
// committed parts without markers. A committer whose marker was taken by
// another lineage stops committing.
//
// Committables carry their directory: a job resumed into another Dir
// finishes the restored pending commits in the old directory if it is
// still there and still its lineage's (or discards them), says so in the
// log, and writes its new output in Dir.
//
// In-progress files (and compaction files) of failed attempts that no
// checkpoint holds are deleted once a checkpoint of the new attempt
// completes (by then every subtask has committed what it restored): each
// subtask deletes those of its own subtask index, and subtask 0 those of
// indexes at or above the current parallelism, left by a run at a higher
// parallelism. A writer closed after a failure deletes the parts no
// checkpoint recorded.
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
	// RollSize is the size in bytes above which a part is closed (Flink's
	// maxPartSize; 0: DefaultRollSize; negative: no limit).
	RollSize int64
	// RollInterval is how long a part stays open at most (Flink's
	// rolloverInterval; 0: DefaultRollInterval; negative: no limit).
	RollInterval time.Duration
	// InactivityInterval closes a part that got no record for so long
	// (Flink's inactivityInterval; 0: DefaultInactivityInterval;
	// negative: never).
	InactivityInterval time.Duration
	// Prefix begins the names of the part files ("": "part"); it must not
	// start with "." or "_". Suffix ends them (".txt", say).
	Prefix, Suffix string
	// Compact, if set, holds rolled parts smaller than a threshold back and
	// concatenates them into larger ones before they become visible (see
	// CompactPolicy; nil: every part is committed as it rolled).
	Compact *CompactPolicy
	// Logger receives what the sink decides on its own: pending commits of
	// another directory finished or discarded, output taken over
	// (nil: slog.Default()).
	Logger *slog.Logger

	now func() time.Time // the clock of the rolling policy (nil: time.Now)
}

// Committable is a part file ready to be committed, or the state of an
// open part at a checkpoint.
type Committable struct {
	// InProgress and Final are the names, in Dir, of the part's
	// in-progress file and of the file it becomes.
	InProgress, Final string
	// Dir is the absolute output directory of the part ("" in committables
	// of checkpoints taken before Weir recorded it: the sink's Dir).
	Dir string
	// Checkpoint is the checkpoint that pre-committed it (0 without
	// checkpoints, and in committables of checkpoints taken before Weir
	// recorded it).
	Checkpoint int64
	// Open marks a part still being written at Checkpoint, Length bytes
	// long then (synced). Committing it is a no-op in the run that wrote
	// it; a restore from Checkpoint cuts the file to Length and commits it.
	Open   bool
	Length int64
	// Sources, if not empty, makes this a compaction (see CompactPolicy):
	// the in-progress names, in Dir, of the small parts that InProgress
	// concatenates, deleted once it is committed.
	Sources []string
	// Held marks a compaction not written yet: a group of small parts kept
	// hidden at Checkpoint. Committing it is a no-op in the run that wrote
	// it; a restore from Checkpoint writes and commits the compaction (one
	// from an earlier checkpoint is superseded).
	Held bool
}

func (s Sink[T]) prefix() string {
	if s.Prefix == "" {
		return "part"
	}
	return s.Prefix
}

func (s Sink[T]) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
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
	if err := s.Compact.validate(); err != nil {
		return err
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
// directory if missing and, with checkpoints, checks that the directory
// may take this run's output and marks it as its lineage's. Parts are
// created when records come.
func (s Sink[T]) CreateWriter(ctx sink.Context) (sink.CommittingWriter[T, Committable], error) {
	if err := s.Validate(ctx.Parallelism()); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("output %s: %w", s.Dir, err)
	}
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", s.Dir, err)
	}
	if ctx.Lineage() != "" {
		if err := claim(dir, s.prefix(), s.Suffix, ctx, s.logger()); err != nil {
			return nil, err
		}
	}
	w := &partWriter[T]{
		dir: dir, format: s.Format, prefix: s.prefix(), suffix: s.Suffix,
		roll: s.RollSize, interval: s.RollInterval, inactivity: s.InactivityInterval, now: s.now,
		subtask: ctx.Subtask(), run: fmt.Sprintf("%016x", rand.Uint64()),
		compact: newCompacting(s.Compact),
	}
	if w.format == nil {
		w.format = func(v T) string { return fmt.Sprint(v) }
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.roll = limit(w.roll, DefaultRollSize)
	w.interval = time.Duration(limit(int64(w.interval), int64(DefaultRollInterval)))
	w.inactivity = time.Duration(limit(int64(w.inactivity), int64(DefaultInactivityInterval)))
	return w, nil
}

// limit is v, or def for 0, or no limit for a negative v.
func limit(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 1<<63 - 1
	}
	return v
}

// CreateCommitter implements sink.TwoPhaseCommitting.
func (s Sink[T]) CreateCommitter(ctx sink.Context) (sink.Committer[Committable], error) {
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", s.Dir, err)
	}
	return &committer{
		dir: dir, prefix: s.prefix(), suffix: s.Suffix, log: s.logger(),
		subtask: ctx.Subtask(), parallelism: ctx.Parallelism(), lineage: ctx.Lineage(),
		restored: ctx.RestoredCheckpoint(), checkpointing: ctx.Checkpointing(),
		open: map[string]Committable{}, held: map[string]Committable{},
	}, nil
}

// part is a part file a writer began.
type part struct {
	c         Committable // names and directory
	f         *os.File    // nil once closed
	size      int64
	opened    time.Time
	lastWrite time.Time
	marked    int64 // the length the last checkpoint recorded (-1: none)
}

// partWriter writes the parts of one subtask.
type partWriter[T any] struct {
	dir, prefix, suffix string // dir is absolute
	format              func(T) string
	roll                int64
	interval            time.Duration
	inactivity          time.Duration
	now                 func() time.Time
	subtask             int
	run                 string      // random, names this writer's parts
	parts               int64       // parts begun
	checkpoint          int64       // the barrier being taken (Barrier)
	compact             *compacting // nil: no compaction

	cur    *part         // the open part, or nil
	w      *bufio.Writer // buffers cur
	rolled []*part       // closed and synced, not prepared yet
	end    bool          // the input ended: PrepareCommit closes everything
	err    error         // a failed write: every later call fails
}

func (w *partWriter[T]) Write(v T, _ int64) error {
	if w.cur == nil {
		if err := w.open(); err != nil {
			return err
		}
	}
	line := w.format(v)
	w.w.WriteString(line)
	if err := w.w.WriteByte('\n'); err != nil {
		return w.fail(fmt.Errorf("file sink: writing %s: %w", w.path(w.cur), err))
	}
	w.cur.size += int64(len(line)) + 1
	w.cur.lastWrite = time.Time{} // set lazily: no clock read per record
	if w.cur.size >= w.roll {
		return w.closePart()
	}
	return nil
}

func (w *partWriter[T]) path(p *part) string { return filepath.Join(w.dir, p.c.InProgress) }

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
	final := w.nextName()
	now := w.now()
	p := &part{c: Committable{InProgress: "." + final + ".inprogress", Final: final, Dir: w.dir}, opened: now, lastWrite: now, marked: -1}
	f, err := os.OpenFile(w.path(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return w.fail(fmt.Errorf("file sink: %w", err))
	}
	p.f, w.cur = f, p
	if w.w == nil {
		w.w = bufio.NewWriterSize(f, 256<<10)
	} else {
		w.w.Reset(f)
	}
	return nil
}

// nextName returns the final name of the next part.
func (w *partWriter[T]) nextName() string {
	w.parts++
	return fmt.Sprintf("%s-%s-%d-%d%s", w.prefix, w.run, w.subtask, w.parts-1, w.suffix)
}

// sync flushes and syncs the open part.
func (w *partWriter[T]) sync() error {
	err := w.w.Flush()
	if err == nil {
		err = w.cur.f.Sync()
	}
	if err != nil {
		return w.fail(fmt.Errorf("file sink: writing %s: %w", w.path(w.cur), err))
	}
	return nil
}

// closePart flushes, syncs and closes the open part.
func (w *partWriter[T]) closePart() error {
	p := w.cur
	err := w.sync()
	if cerr := p.f.Close(); err == nil && cerr != nil {
		err = w.fail(fmt.Errorf("file sink: writing %s: %w", w.path(p), cerr))
	}
	p.f, w.cur = nil, nil
	if err != nil {
		w.discard(p)
		return err
	}
	w.rolled = append(w.rolled, p)
	return nil
}

// rollOnTime closes the open part if it is older than the rollover
// interval or was inactive for the inactivity interval.
func (w *partWriter[T]) rollOnTime() error {
	if w.cur == nil {
		return nil
	}
	now := w.now()
	if w.cur.lastWrite.IsZero() {
		w.cur.lastWrite = now // records came since the last check
	}
	if now.Sub(w.cur.opened) >= w.interval || now.Sub(w.cur.lastWrite) >= w.inactivity {
		return w.closePart()
	}
	return nil
}

// Flush implements sink.Writer: it applies the time rules of the rolling
// policy. Parts are written out at PrepareCommit.
func (w *partWriter[T]) Flush(endOfInput bool) error {
	if w.err != nil {
		return w.err
	}
	if endOfInput {
		w.end = true
		return nil
	}
	return w.rollOnTime()
}

// Barrier implements sink.BarrierAware: committables carry their checkpoint.
func (w *partWriter[T]) Barrier(id int64) error {
	w.checkpoint = id
	return nil
}

// PrepareCommit returns the parts closed since the last call and, for the
// part still open, its synced length (an Open committable), once their
// directory entries are durable. At the end of input it closes the open
// part.
func (w *partWriter[T]) PrepareCommit() ([]Committable, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.cur != nil && w.end {
		if err := w.closePart(); err != nil {
			return nil, err
		}
	} else if err := w.rollOnTime(); err != nil {
		return nil, err
	}
	syncEntries := len(w.rolled) > 0
	var cs []Committable
	if w.compact != nil {
		var err error
		if cs, err = w.prepareCompaction(w.rolled); err != nil {
			return nil, err
		}
	} else {
		for _, p := range w.rolled {
			cs = append(cs, w.closed(p))
		}
	}
	for _, c := range cs {
		syncEntries = syncEntries || len(c.Sources) > 0 // a compaction file
	}
	w.rolled = nil
	if p := w.cur; p != nil {
		if p.size != p.marked {
			if err := w.sync(); err != nil {
				return nil, err
			}
		}
		syncEntries = syncEntries || p.marked < 0
		p.marked = p.size
		c := p.c
		c.Checkpoint, c.Open, c.Length = w.checkpoint, true, p.size
		cs = append(cs, c)
	}
	if syncEntries {
		if err := syncDir(w.dir); err != nil {
			return nil, w.fail(fmt.Errorf("file sink: syncing directory %s: %w", w.dir, err))
		}
	}
	return cs, nil
}

// Close leaves the parts that a checkpoint recorded cut to the length it
// recorded (a restore, or the committer's Close, commits them) and deletes
// the others, which no checkpoint holds. A held group of small parts is
// compacted as the last checkpoint recorded it, as a restore from that
// checkpoint would, so the committer's Close can commit it if that
// checkpoint completed.
func (w *partWriter[T]) Close() error {
	if k := w.compact; k != nil && k.group != nil && w.err == nil {
		c := k.group.committable(w.dir, w.checkpoint)
		if err := concat(w.dir, c.InProgress, c.Sources); err != nil {
			os.Remove(filepath.Join(w.dir, c.InProgress)) // the restore writes it
		}
		k.group = nil
	}
	if p := w.cur; p != nil {
		p.f.Close()
		p.f, w.cur = nil, nil
		w.discard(p)
	}
	for _, p := range w.rolled {
		w.discard(p)
	}
	w.rolled = nil
	return nil
}

// discard cuts a closed part to the length the last checkpoint recorded,
// or deletes it if none did. Failures are ignored: a restore cuts the file
// again, and an unrecorded one is garbage that the next attempt deletes.
func (w *partWriter[T]) discard(p *part) {
	if p.marked < 0 {
		os.Remove(w.path(p))
		return
	}
	os.Truncate(w.path(p), p.marked)
}

// parsePart returns the run and subtask of the part file called name, an
// in-progress file (".<final>.inprogress") if inProgress, else a
// committed one, if it is one of a sink with this prefix and suffix.
func parsePart(name, prefix, suffix string, inProgress bool) (run string, subtask int, ok bool) {
	head, tail := prefix+"-", suffix
	if inProgress {
		head, tail = "."+head, tail+".inprogress"
	}
	rest, ok1 := strings.CutPrefix(name, head)
	rest, ok2 := strings.CutSuffix(rest, tail)
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

// validPartName reports whether name is a file name of the directory itself.
func validPartName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

// The sinks and sources implement their contracts.
var (
	_ sink.TwoPhaseCommitting[string, Committable] = Sink[string]{}
	_ sink.BarrierAware                            = (*partWriter[string])(nil)
	_ sink.Sink[string]                            = TextSink[string]{}
	_ source.Source[string, Split]                 = TextSource{}
	_ source.Source[Line, Split]                   = LineSource{}
)
