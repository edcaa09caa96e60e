package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/source"
)

// StdinName is the name standard input (Path "-") goes by in Line.Path.
const StdinName = "stdin"

// Split is a byte range of one file, with the position reached in it. A
// split owns every line that starts in [Start, End); the line starting at
// End belongs to the next split.
//
// A split with Stream set is a whole input that cannot be sized or seeked
// (standard input, a pipe, a FIFO or a character device): it is read once,
// from its start to its end, without seeking; Start and End are 0. It
// cannot be resumed: a stream split that a reader had started is refused
// after a restore.
type Split struct {
	Path       string
	Start, End int64
	Stream     bool
	// Started is set once a reader began reading the split; Offset and
	// Lines are then its position. A split not started is read from the
	// first line that starts at or after Start.
	Started bool
	// Offset is the offset in the file of the next unread line (for a
	// stream, 0).
	Offset int64
	// Lines counts the lines of the split read before Offset; for a split
	// that starts at 0 (every split of a LineSource), the number of the last
	// line read.
	Lines int64
}

// TextSource reads the lines of an input without their line endings (\n or
// \r\n). The input (Path) is one of:
//   - a regular file, cut into splits at byte offsets;
//   - a directory: every regular file in it whose name does not start with
//     "." or "_", in name order, each cut into splits;
//   - "-": standard input, read as one split, streaming to its end;
//   - anything else that is not a directory (a FIFO, a character device such
//     as /dev/stdin): read as one split, streaming to its end, never seeked.
//
// The enumerator lists the input when the source first starts and hands
// the splits out in order, one to each reader that asks (a reader asks
// when it has none left), so an input read as one split is read by one
// subtask only. A checkpoint holds each reader's splits with the offset of
// the next unread line, and the splits not handed out yet: a restored job,
// at any parallelism, reads every line exactly once. Files must not change
// while they are read or between a checkpoint and a restore from it: a
// restore refuses another input, and a file gone or shorter than a
// restored split, but cannot see a file rewritten to the same length; it
// logs files added to the input, and does not read them.
type TextSource struct {
	Path string
	// SplitSize is the largest split in bytes (0: chosen from the input size
	// and parallelism so every subtask gets work).
	SplitSize int64
	// Stdin is what Path "-" reads (nil: os.Stdin).
	Stdin io.Reader
	// RatePerSecond > 0 limits the source to that many lines a second
	// (each reader its share), by processing time.
	RatePerSecond float64
	// Logger receives what a restored source notices about its input:
	// files added or grown since the checkpoint's run listed it, which it
	// does not read (nil: slog.Default()).
	Logger *slog.Logger
}

// Splits lists the splits of the input for a source of the given parallelism,
// in a deterministic order.
func (s TextSource) Splits(parallelism int) ([]Split, error) {
	return splitInput(s.Path, s.splitSize(), parallelism)
}

func (s TextSource) splitSize() int64 {
	if s.SplitSize <= 0 {
		return -1 // chosen from the total size
	}
	return s.SplitSize
}

// Boundedness implements source.Source: the input ends (a stream when its
// writer closes it).
func (s TextSource) Boundedness() source.Boundedness { return source.Bounded }

// SplitCodec implements source.Source.
func (s TextSource) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (s TextSource) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	return newEnumerator(ctx, restored, s.Path, s.Logger, func(in []input) []Split { return cutInputs(in, s.splitSize(), ctx.Parallelism()) })
}

// CreateReader implements source.Source.
func (s TextSource) CreateReader(ctx source.ReaderContext) (source.Reader[string, Split], error) {
	return &textReader{lines: newLineReader(ctx, s.Path, s.Stdin), rate: newThrottle(ctx.Clock(), s.RatePerSecond, ctx.Parallelism())}, nil
}

// Line is one line of a LineSource's input.
type Line struct {
	// Path is the file the line was read from: the source's Path, or for a
	// directory the path of the file in it; StdinName for standard input.
	Path string
	// Number is the 1-based number of the line in its file.
	Number int64
	// Text is the line without its ending (\n or \r\n).
	Text string
}

// MaxLineBytes bounds the length of one line: a longer line fails the job
// with ErrLineTooLong instead of taking unbounded memory (a binary file read
// as text, say).
const MaxLineBytes = 64 << 20

// ErrLineTooLong is the error of a line longer than MaxLineBytes.
var ErrLineTooLong = errors.New("line longer than 64 MiB (the file source's limit; is it a text file?)")

// LineSource reads the same inputs as TextSource, but emits every line with
// the file it came from and its number in that file, for messages that point
// at bad input. Its splits are whole files, so line numbers are exact: a file
// is read by one subtask, at parallelism 1 all files in name order. A
// checkpoint holds, with the offset of the next unread line, how many lines
// of the file were read, so the numbers go on right after a restore.
type LineSource struct {
	Path string
	// Stdin is what Path "-" reads (nil: os.Stdin).
	Stdin io.Reader
	// RatePerSecond > 0 limits the source to that many lines a second
	// (each reader its share), by processing time.
	RatePerSecond float64
	// Logger receives what a restored source notices about its input:
	// files added or grown since the checkpoint's run listed it, which it
	// does not read (nil: slog.Default()).
	Logger *slog.Logger
}

// Splits lists the splits of the input, one per file, in name order.
func (s LineSource) Splits() ([]Split, error) { return splitInput(s.Path, 0, 1) }

// Boundedness implements source.Source.
func (s LineSource) Boundedness() source.Boundedness { return source.Bounded }

// SplitCodec implements source.Source.
func (s LineSource) SplitCodec() codec.Codec[Split] { return splitCodec{} }

// CreateEnumerator implements source.Source.
func (s LineSource) CreateEnumerator(ctx source.EnumeratorContext[Split], restored []byte) (source.Enumerator[Split], error) {
	return newEnumerator(ctx, restored, s.Path, s.Logger, func(in []input) []Split { return cutInputs(in, 0, 1) })
}

// CreateReader implements source.Source.
func (s LineSource) CreateReader(ctx source.ReaderContext) (source.Reader[Line, Split], error) {
	return &lineSourceReader{lines: newLineReader(ctx, s.Path, s.Stdin), rate: newThrottle(ctx.Clock(), s.RatePerSecond, ctx.Parallelism())}, nil
}

// enumerator lists the input when the source first starts and hands a split
// to each reader that asks, in order; a reader that asks when none are
// left is told there will be no more. Its state is the input it read (its
// path made absolute), the files it listed with their sizes, and the
// splits not handed out. A restored enumerator refuses an input other than
// the one its checkpoint recorded, or a restored split whose file is gone
// or shorter than the split, and logs files added to the input or grown
// since it listed it: it does not read them (a bounded source reads what
// it listed at its first start, as Flink's bounded FileSource does).
type enumerator struct {
	ctx  source.EnumeratorContext[Split]
	path string // the input as configured
	root string // inputRoot(path)
	cut  func([]input) []Split
	log  *slog.Logger

	restored bool
	state    enumeratorState // as restored, or as listed at the first start
}

// enumeratorState is what a checkpoint holds of the enumerator. Root and
// Files are empty in states of Weir before enumeratorVersion 2.
type enumeratorState struct {
	Root  string  // inputRoot of the input it listed
	Files []input // the input's files when it was listed, with their sizes
	Left  []Split // the splits not handed out
}

func newEnumerator(ctx source.EnumeratorContext[Split], restored []byte, path string, log *slog.Logger, cut func([]input) []Split) (*enumerator, error) {
	if log == nil {
		log = slog.Default()
	}
	e := &enumerator{ctx: ctx, path: path, root: inputRoot(path), cut: cut, log: log}
	if restored != nil {
		st, err := decodeEnumeratorState(restored)
		if err != nil {
			return nil, fmt.Errorf("file source: restoring the split enumerator: %w", err)
		}
		e.state, e.restored = st, true
	}
	return e, nil
}

// Start lists the input, unless the enumerator was restored: then it
// checks that the input is the one the checkpoint read, and the files of
// the splits it holds.
func (e *enumerator) Start() error {
	if e.restored {
		return e.checkRestored()
	}
	files, err := listInputs(e.path)
	if err != nil {
		return err
	}
	e.state = enumeratorState{Root: e.root, Files: files, Left: e.cut(files)}
	return nil
}

// checkRestored refuses a restore into another input, and splits whose
// files are gone or shorter than they were; it logs what was added to the
// input since the checkpoint's run listed it.
func (e *enumerator) checkRestored() error {
	if e.state.Root != "" && e.state.Root != e.root {
		return changedInput(fmt.Sprintf("read input %s", e.state.Root), e.path)
	}
	sizes := map[string]int64{} // a large file has many splits
	for _, sp := range e.state.Left {
		if err := checkRestoredSplit(sp, e.path, e.root, sizes); err != nil {
			return err
		}
	}
	if e.state.Root == "" {
		// A state of version 1 lists no files: the next checkpoints list
		// those of today, to compare with at their restores.
		e.state.Root = e.root
		e.state.Files, _ = listInputs(e.path)
		return nil
	}
	e.logAdded()
	return nil
}

// logAdded lists the input again and logs the files added or grown since
// the enumerator first listed it: a restored bounded source does not read
// them.
func (e *enumerator) logAdded() {
	if e.path == "-" {
		return
	}
	now, err := listInputs(e.path)
	if err != nil {
		return // what the restored splits need was checked
	}
	listed := make(map[string]int64, len(e.state.Files))
	for _, in := range e.state.Files {
		listed[inputRoot(in.path)] = in.size
	}
	var added []string
	for _, in := range now {
		size, ok := listed[inputRoot(in.path)]
		switch {
		case !ok:
			added = append(added, in.path)
		case in.size > size && !in.stream:
			e.log.Warn("file source: a file of the input grew after the job first listed it; a restored job reads it only up to the size it had then (start without --from to read all of it)",
				"file", in.path, "listed size", size, "size", in.size)
		}
	}
	if len(added) > 0 {
		e.log.Warn("file source: files were added to the input after the job first listed it; a restored job reads only the files it listed at its first start, so these are not read (start without --from to read them)",
			"input", e.path, "added", len(added), "first", added[0])
	}
}

// changedInput is the error of a restore whose checkpoint read another input.
func changedInput(what, path string) error {
	// Permanent: every restart from this checkpoint finds the same splits.
	return failure.Permanent(fmt.Errorf("file source: the checkpoint being restored %s, but this run's input is %s: a restored job goes on with the splits its checkpoint recorded and would not read the new input; resume with the same --input, or start without --from to read the new one", what, inputRoot(path)))
}

// checkRestoredSplit checks a split restored from a checkpoint: it must be
// of the source's input (path, whose inputRoot is root), and its file must
// still hold the split's bytes. sizes caches the sizes of files checked.
func checkRestoredSplit(sp Split, path, root string, sizes map[string]int64) error {
	if !within(sp.Path, root) {
		return changedInput(fmt.Sprintf("reads %s", sp.Path), path)
	}
	if sp.Stream {
		return nil
	}
	at := sp.Start
	if sp.Started {
		at = sp.Offset
	}
	if size, ok := sizes[sp.Path]; ok && size >= sp.End {
		return nil
	}
	st, err := os.Stat(sp.Path)
	if err == nil && st.Mode().IsRegular() {
		sizes[sp.Path] = st.Size()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Permanent, as is a file too short: every restart from this
		// checkpoint finds the same split.
		return failure.Permanent(fmt.Errorf("file source: %s is gone, but the checkpoint being restored has yet to read it from byte %d to byte %d: the input changed after the checkpoint; resume with the input as it was, or start without --from", sp.Path, at, sp.End))
	case err != nil:
		return inputError(sp.Path, err)
	case st.Mode().IsRegular() && st.Size() < sp.End:
		return failure.Permanent(fmt.Errorf("file source: %s is %d bytes long, but the checkpoint being restored has yet to read it from byte %d to byte %d: the file was truncated or replaced after the checkpoint; resume with the input as it was, or start without --from", sp.Path, st.Size(), at, sp.End))
	}
	return nil
}

// inputRoot is the path of an input as checkpoints record it: "-" for
// standard input, else absolute and clean, so that a resume from another
// working directory is not taken for the same input.
func inputRoot(path string) string {
	if path == "-" {
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// within reports whether the file at path is the input root or in it.
func within(path, root string) bool {
	p := inputRoot(path)
	if p == root {
		return true
	}
	return root != "-" && strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

func (e *enumerator) AddReader(int) error { return nil }

func (e *enumerator) HandleSplitRequest(i int) error {
	if len(e.state.Left) == 0 {
		e.ctx.NoMoreSplits(i)
		return nil
	}
	sp := e.state.Left[0]
	e.state.Left = e.state.Left[1:]
	e.ctx.Assign(i, sp)
	return nil
}

func (e *enumerator) Snapshot(int64) ([]byte, error) {
	st := e.state
	st.Root = e.root // also before Start
	return encodeEnumeratorState(st), nil
}

func (e *enumerator) Close() error { return nil }

// input is one file of a source's input.
type input struct {
	path   string
	size   int64
	stream bool
}

// splitInput cuts the input at path into splits of at most size bytes
// (0: whole files; -1: chosen from the total size and parallelism).
func splitInput(path string, size int64, parallelism int) ([]Split, error) {
	inputs, err := listInputs(path)
	if err != nil {
		return nil, err
	}
	return cutInputs(inputs, size, parallelism), nil
}

// cutInputs cuts inputs into splits as splitInput does.
func cutInputs(inputs []input, size int64, parallelism int) []Split {
	if size < 0 {
		var total int64
		for _, in := range inputs {
			total += in.size
		}
		size = max(total/int64(max(parallelism, 1)*4)+1, 1<<20)
	}
	var out []Split
	for _, in := range inputs {
		if in.stream {
			out = append(out, Split{Path: in.path, Stream: true})
			continue
		}
		if size == 0 {
			if in.size > 0 {
				out = append(out, Split{Path: in.path, End: in.size})
			}
			continue
		}
		for start := int64(0); start < in.size; {
			end := in.size
			if end-start > size {
				end = start + size
			}
			out = append(out, Split{Path: in.path, Start: start, End: end})
			start = end
		}
	}
	return out
}

func listInputs(path string) ([]input, error) {
	if path == "-" {
		return []input{{path: path, stream: true}}, nil
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("file source: input %s does not exist", path)
	} else if err != nil {
		return nil, inputError(path, err)
	}
	switch {
	case st.Mode().IsRegular():
		return []input{{path: path, size: st.Size()}}, nil
	case !st.IsDir():
		return []input{{path: path, stream: true}}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, inputError(path, err)
	}
	var files []input
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, inputError(filepath.Join(path, e.Name()), err)
		}
		files = append(files, input{path: filepath.Join(path, e.Name()), size: info.Size()})
	}
	slices.SortFunc(files, func(a, b input) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// inputError says which input could not be read and why.
func inputError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("file source: input %s: %w", path, err)
}

// textReader emits the lines of its splits.
type textReader struct {
	lines lineReader
	rate  throttle
	out   splitOutputs[string]
}

func (r *textReader) Start() error                         { return r.lines.checkRestored() }
func (r *textReader) AddSplits(splits []Split)             { r.lines.addSplits(splits) }
func (r *textReader) NoMoreSplits()                        { r.lines.noMoreSplits() }
func (r *textReader) Close() error                         { return r.lines.close() }
func (r *textReader) NotifyCheckpointComplete(int64) error { return nil }

func (r *textReader) SnapshotState(int64) ([]Split, error) { return r.lines.snapshot(), nil }

// PauseOrResumeSplits implements source.SplitPauser.
func (r *textReader) PauseOrResumeSplits(pause, resume []string) {
	r.lines.pauseOrResume(pause, resume)
}

func (r *textReader) PollNext(out source.Output[string]) (source.Status, <-chan struct{}, time.Duration, error) {
	if r.lines.err != nil {
		return 0, nil, 0, r.lines.err
	}
	n, wait := r.rate.allowed(256)
	if n == 0 {
		return source.NothingAvailable, nil, wait, nil
	}
	for i := range n {
		line, ok := r.lines.next()
		if r.lines.epoch != r.out.epoch {
			r.out.sync(&r.lines, out)
		}
		if !ok {
			r.rate.took(i)
			return r.lines.status, r.lines.wait, 0, r.lines.err
		}
		r.out.cur.Collect(line)
		if out.ShouldYield() {
			n = i + 1
			break
		}
	}
	r.rate.took(n)
	return source.MoreAvailable, nil, 0, nil
}

// lineSourceReader emits the lines of its splits with their file and number.
type lineSourceReader struct {
	lines lineReader
	rate  throttle
	out   splitOutputs[Line]
}

func (r *lineSourceReader) Start() error                         { return r.lines.checkRestored() }
func (r *lineSourceReader) AddSplits(splits []Split)             { r.lines.addSplits(splits) }
func (r *lineSourceReader) NoMoreSplits()                        { r.lines.noMoreSplits() }
func (r *lineSourceReader) Close() error                         { return r.lines.close() }
func (r *lineSourceReader) NotifyCheckpointComplete(int64) error { return nil }

func (r *lineSourceReader) SnapshotState(int64) ([]Split, error) { return r.lines.snapshot(), nil }

// PauseOrResumeSplits implements source.SplitPauser.
func (r *lineSourceReader) PauseOrResumeSplits(pause, resume []string) {
	r.lines.pauseOrResume(pause, resume)
}

func (r *lineSourceReader) PollNext(out source.Output[Line]) (source.Status, <-chan struct{}, time.Duration, error) {
	if r.lines.err != nil {
		return 0, nil, 0, r.lines.err
	}
	n, wait := r.rate.allowed(256)
	if n == 0 {
		return source.NothingAvailable, nil, wait, nil
	}
	for i := range n {
		text, ok := r.lines.next()
		if r.lines.epoch != r.out.epoch {
			r.out.sync(&r.lines, out)
		}
		if !ok {
			r.rate.took(i)
			return r.lines.status, r.lines.wait, 0, r.lines.err
		}
		r.out.cur.Collect(Line{Path: r.lines.name, Number: r.lines.number, Text: text})
		if out.ShouldYield() {
			n = i + 1
			break
		}
	}
	r.rate.took(n)
	return source.MoreAvailable, nil, 0, nil
}

// splitOutputs follows a lineReader's splits with the reader's per-split
// outputs (source.Output.ForSplit), so a source with a watermark strategy
// keeps a watermark per split. It syncs only when the lineReader's epoch
// moved (a split came, opened or ended), not per line.
type splitOutputs[T any] struct {
	epoch int
	cur   source.SplitOutput[T] // the output of the split being read
}

func (o *splitOutputs[T]) sync(c *lineReader, out source.Output[T]) {
	for _, id := range c.added {
		out.ForSplit(id)
	}
	for _, id := range c.done {
		out.ReleaseSplit(id)
	}
	c.added, c.done = c.added[:0], c.done[:0]
	o.cur = nil
	if c.curID != "" {
		o.cur = out.ForSplit(c.curID)
	}
	o.epoch = c.epoch
}

// splitID names a split to source.Output.ForSplit: its input and first
// byte, unique within the source.
func splitID(sp Split) string {
	if sp.Stream {
		return sp.Path
	}
	return sp.Path + "@" + strconv.FormatInt(sp.Start, 10)
}

// lineReader reads the lines of one reader's splits, one at a time; it is
// the part TextSource and LineSource share.
type lineReader struct {
	ctx    source.ReaderContext
	path   string    // the source's input
	root   string    // inputRoot(path)
	stdin  io.Reader // what "-" reads (nil: os.Stdin)
	splits []Split   // assigned or restored, not yet opened

	requested bool          // a split was asked for and has not come
	noMore    bool          // no more splits will come
	wake      chan struct{} // signalled when splits come or no more will

	cur    Split  // the split being read, as assigned
	name   string // the file being read, as Line.Path shows it
	start  int64  // the current split's first byte
	number int64  // lines read from the current split so far

	// A split of a regular file, read on the task goroutine.
	f   *os.File
	r   *bufio.Reader
	pos int64 // offset of the next unread byte of the current split's file
	end int64
	// A streamed split, read on a goroutine of its own.
	s     *stream
	batch []string // lines taken from s; batch[taken:] are not emitted yet
	taken int

	// What PollNext returns when next has no line. err stays set: a
	// reader that failed fails again.
	status source.Status
	wait   <-chan struct{}
	err    error

	// For splitOutputs: epoch moves when a split is added, opened or
	// done; added and done are the ids since the last sync (bounded by
	// the splits held), curID the split being read ("" between splits).
	epoch       int
	added, done []string
	curID       string
	lastLine    bool // the line returned was the last of the split
	// paused holds the ids of splits paused by watermark alignment
	// (source.SplitPauser), at most those held. stall says the reader
	// waits for a resume (see updateStall).
	paused map[string]bool
	stall  bool
}

// pauseOrResume implements source.SplitPauser for both readers. The reader
// reads one split at a time: while the one being read is paused it waits
// for a resume (a streamed split's goroutine fills its bounded queue and
// stops), unless a split queued behind it is not paused (updateStall).
func (c *lineReader) pauseOrResume(pause, resume []string) {
	if c.paused == nil {
		c.paused = map[string]bool{}
	}
	for _, id := range pause {
		if id == c.curID || slices.ContainsFunc(c.splits, func(sp Split) bool { return splitID(sp) == id }) {
			c.paused[id] = true
		}
	}
	for _, id := range resume {
		delete(c.paused, id)
	}
	c.updateStall()
	if len(resume) > 0 {
		signal(c.wake)
	}
}

// updateStall decides whether the reader waits: when the split being read
// is paused and so is every split queued behind it. A queued split's output
// was made when the split came, so its watermark is in the source's (and
// the alignment group's) minimum; when it is not paused it may be what holds
// the group back, and it can be read only after the current split: waiting
// would never end. The reader then reads on, the paused split running ahead
// of the drift, as Flink's unaligned source splits do. (Splits are queued
// behind another only after a restore; the enumerator hands out one at a
// time.) Called whenever the pauses, the queue or the current split change,
// so that next checks one bool per line.
func (c *lineReader) updateStall() {
	c.stall = c.curID != "" && c.paused[c.curID]
	for _, sp := range c.splits {
		if !c.stall {
			return
		}
		c.stall = c.paused[splitID(sp)]
	}
}

func newLineReader(ctx source.ReaderContext, path string, stdin io.Reader) lineReader {
	return lineReader{ctx: ctx, path: path, root: inputRoot(path), stdin: stdin, wake: make(chan struct{}, 1)}
}

// checkRestored checks the splits restored from a checkpoint, those added before
// it: they must be of the source's input, and their files must still hold
// them (checkRestoredSplit).
func (c *lineReader) checkRestored() error {
	if c.err != nil {
		return c.err
	}
	sizes := map[string]int64{}
	for _, sp := range c.splits {
		if err := checkRestoredSplit(sp, c.path, c.root, sizes); err != nil {
			c.err = err
			return err
		}
	}
	return nil
}

func (c *lineReader) fail(err error) (string, bool) {
	c.status, c.wait, c.err = 0, nil, err
	return "", false
}

// addSplits queues splits. A stream that a reader had started cannot be
// read again: the reader fails.
func (c *lineReader) addSplits(splits []Split) {
	for _, sp := range splits {
		if sp.Stream && sp.Started && c.err == nil {
			c.err = notReplayable(sp)
		}
	}
	c.splits = append(c.splits, splits...)
	for _, sp := range splits {
		c.added = append(c.added, splitID(sp))
	}
	c.epoch++
	c.requested = false
	c.updateStall()
	signal(c.wake)
}

func (c *lineReader) noMoreSplits() {
	c.noMore = true
	signal(c.wake)
}

// notReplayable is the error of a restored stream split that was partly read.
func notReplayable(sp Split) error {
	what := sp.Path + " (a pipe, FIFO or device: a stream, not a file)"
	if sp.Path == "-" {
		what = "standard input (a stream, not a file)"
	}
	// Permanent: every restart from this checkpoint finds the same split.
	return failure.Permanent(fmt.Errorf("file source: cannot resume reading %s after a restore: it was being read when the checkpoint was taken (%d lines read), and a stream is not replayable; run the job again from its start, or save the input to a file and read that", what, sp.Lines))
}

// snapshot returns the reader's unfinished splits with their positions.
func (c *lineReader) snapshot() []Split {
	out := make([]Split, 0, len(c.splits)+1)
	switch {
	case c.f != nil && c.pos < c.end:
		sp := c.cur
		sp.Started, sp.Offset, sp.Lines = true, c.pos, c.number
		out = append(out, sp)
	case c.s != nil && !(c.taken == len(c.batch) && c.s.drained()):
		sp := c.cur
		sp.Started, sp.Offset, sp.Lines = true, 0, c.number
		out = append(out, sp)
	}
	return append(out, c.splits...)
}

// next returns the next line. When ok is false there is none now, and
// c.status, c.wait and c.err are what PollNext returns.
func (c *lineReader) next() (line string, ok bool) {
	if c.lastLine {
		c.lastLine = false
		c.finished()
	}
	for {
		if c.stall {
			c.status, c.wait = source.NothingAvailable, c.wake
			return "", false
		}
		switch {
		case c.f != nil:
			if c.pos >= c.end {
				c.closeFile()
				c.finished()
				continue
			}
			at := c.pos
			line, n, err := readLine(c.r)
			c.pos += int64(n)
			if at == 0 {
				line = strings.TrimPrefix(line, bom)
			}
			if err != nil && err != io.EOF {
				return c.fail(c.readError(err))
			}
			if err == io.EOF {
				c.closeFile()
				if len(line) == 0 {
					c.finished()
					continue
				}
				// The split's last line, without a line ending: the
				// split ends after it, at the next call.
				c.lastLine = true
			}
			c.number++
			return line, true
		case c.s != nil:
			if c.taken < len(c.batch) {
				line := c.batch[c.taken]
				c.batch[c.taken] = ""
				c.taken++
				c.number++
				return line, true
			}
			batch, done, err := c.s.take(c.batch[:0])
			c.batch, c.taken = batch, 0
			switch {
			case len(batch) > 0:
				continue
			case err != nil:
				return c.fail(c.readError(err))
			case done:
				c.s.close()
				c.s = nil
				c.finished()
				continue
			}
			c.status, c.wait, c.err = source.NothingAvailable, c.s.ready, nil
			return "", false
		}
		if len(c.splits) == 0 {
			switch {
			case c.noMore:
				c.status, c.wait = source.EndOfInput, nil
			case !c.requested:
				c.requested = true
				c.ctx.RequestSplit()
				fallthrough
			default:
				c.status, c.wait = source.NothingAvailable, c.wake
			}
			return "", false
		}
		sp := c.splits[0]
		c.splits = c.splits[1:]
		if err := c.open(sp); err != nil {
			return c.fail(err)
		}
	}
}

// open starts reading a split: a streamed one on its own goroutine; else
// at its position if it was started, or at the first line that starts in it.
func (c *lineReader) open(sp Split) error {
	c.cur, c.name, c.start, c.number = sp, sp.Path, sp.Start, 0
	c.curID = splitID(sp)
	c.epoch++
	c.updateStall()
	if sp.Stream {
		if sp.Started {
			return notReplayable(sp)
		}
		var in io.Reader
		if sp.Path == "-" {
			c.name, in = StdinName, c.stdin
			if in == nil {
				in = os.Stdin
			}
		}
		c.s = startStream(sp.Path, in)
		return nil
	}
	f, err := os.Open(sp.Path)
	if err != nil {
		return inputError(sp.Path, err)
	}
	c.f, c.end = f, sp.End
	skip := sp.Start > 0 && !sp.Started
	switch {
	case sp.Started:
		// Resumed at a line boundary.
		c.pos, c.number = sp.Offset, sp.Lines
	case skip:
		// The line that contains byte Start-1 belongs to the previous split.
		c.pos = sp.Start - 1
	default:
		c.pos = sp.Start
	}
	if _, err := f.Seek(c.pos, io.SeekStart); err != nil {
		return fmt.Errorf("file source: %s: %w", sp.Path, err)
	}
	if c.r == nil {
		c.r = bufio.NewReaderSize(f, 256<<10)
	} else {
		c.r.Reset(f)
	}
	if skip {
		skipped, err := c.r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			c.pos += int64(len(skipped))
			skipped, err = c.r.ReadSlice('\n')
		}
		c.pos += int64(len(skipped))
		if err != nil && err != io.EOF {
			return fmt.Errorf("file source: %s: %w", sp.Path, err)
		}
	}
	return nil
}

// readError says which input failed and where.
func (c *lineReader) readError(err error) error {
	if c.start > 0 {
		return fmt.Errorf("file source: reading %s from byte %d, after line %d of that split: %w", c.name, c.start, c.number, err)
	}
	if c.number == 0 {
		return fmt.Errorf("file source: reading %s: %w", c.name, err)
	}
	return fmt.Errorf("file source: reading %s after line %d: %w", c.name, c.number, err)
}

// readLine reads one line without its ending; n is how many bytes it took
// from r, ending included.
func readLine(r *bufio.Reader) (line string, n int, err error) {
	b, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), b...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= MaxLineBytes+2 {
			b, err = r.ReadSlice('\n')
			long = append(long, b...)
		}
		if n := len(bytes.TrimSuffix(bytes.TrimSuffix(long, []byte{'\n'}), []byte{'\r'})); n > MaxLineBytes {
			return "", len(long), ErrLineTooLong
		}
		b = long
	}
	n = len(b)
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return string(b), n, err
}

// finished says the current split was read to its end: its output is
// released at the next sync.
func (c *lineReader) finished() {
	delete(c.paused, c.curID)
	c.done = append(c.done, c.curID)
	c.curID = ""
	c.epoch++
	c.stall = false
}

func (c *lineReader) closeFile() {
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

func (c *lineReader) close() error {
	c.closeFile()
	if c.s != nil {
		c.s.close()
		c.s = nil
	}
	return nil
}
