package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weirhq/weir/internal/operator"
)

// StdinName is the name standard input (Path "-") goes by in Line.Path.
const StdinName = "stdin"

// Split is a byte range of one file. A split owns every line that starts in
// [Start, End); the line starting at End belongs to the next split.
//
// A split with Stream set is a whole input that cannot be sized or seeked
// (standard input, a pipe, a FIFO or a character device): it is read once,
// from its start to its end, without seeking; Start and End are 0.
type Split struct {
	Path       string
	Start, End int64
	Stream     bool
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
// Splits j are read by subtask j mod parallelism, so an input read as one
// split is read by one subtask only.
type TextSource struct {
	Path string
	// SplitSize is the largest split in bytes (0: chosen from the input size
	// and parallelism so every subtask gets work).
	SplitSize int64
	// Stdin is what Path "-" reads (nil: os.Stdin).
	Stdin io.Reader
}

// Splits lists the splits of the input for a source of the given parallelism,
// in a deterministic order.
func (s TextSource) Splits(parallelism int) ([]Split, error) {
	size := s.SplitSize
	if size <= 0 {
		size = -1 // chosen from the total size
	}
	return splitInput(s.Path, size, parallelism)
}

// NewReader implements the source contract.
func (s TextSource) NewReader() operator.SourceReader[string] {
	return &textReader{lines: lineReader{stdin: s.Stdin}, src: s}
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
// is read by one subtask, at parallelism 1 all files in name order.
type LineSource struct {
	Path string
	// Stdin is what Path "-" reads (nil: os.Stdin).
	Stdin io.Reader
}

// Splits lists the splits of the input, one per file, in name order.
func (s LineSource) Splits() ([]Split, error) { return splitInput(s.Path, 0, 1) }

// NewReader implements the source contract.
func (s LineSource) NewReader() operator.SourceReader[Line] {
	return &lineSourceReader{lines: lineReader{stdin: s.Stdin}, src: s}
}

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
	return out, nil
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

// textReader reads the splits j with j mod parallelism == subtask.
type textReader struct {
	src   TextSource
	lines lineReader
}

func (r *textReader) Open(ctx *operator.Context) error {
	all, err := r.src.Splits(ctx.Parallelism)
	if err != nil {
		return err
	}
	r.lines.assign(all, ctx)
	return nil
}

func (r *textReader) Poll(out operator.Input[string]) (operator.Status, <-chan struct{}, int64, error) {
	for range 256 {
		line, ok := r.lines.next()
		if !ok {
			return r.lines.status, r.lines.wait, 0, r.lines.err
		}
		out.ProcessElement(line, operator.NoTimestamp)
	}
	return operator.MoreAvailable, nil, 0, nil
}

func (r *textReader) Close() error { return r.lines.close() }

// lineSourceReader reads the files j with j mod parallelism == subtask.
type lineSourceReader struct {
	src   LineSource
	lines lineReader
}

func (r *lineSourceReader) Open(ctx *operator.Context) error {
	all, err := r.src.Splits()
	if err != nil {
		return err
	}
	r.lines.assign(all, ctx)
	return nil
}

func (r *lineSourceReader) Poll(out operator.Input[Line]) (operator.Status, <-chan struct{}, int64, error) {
	for range 256 {
		text, ok := r.lines.next()
		if !ok {
			return r.lines.status, r.lines.wait, 0, r.lines.err
		}
		out.ProcessElement(Line{Path: r.lines.name, Number: r.lines.number, Text: text}, operator.NoTimestamp)
	}
	return operator.MoreAvailable, nil, 0, nil
}

func (r *lineSourceReader) Close() error { return r.lines.close() }

// lineReader reads the lines of one subtask's splits, one at a time; it is
// the part TextSource and LineSource share.
type lineReader struct {
	stdin  io.Reader // what "-" reads (nil: os.Stdin)
	splits []Split   // not yet opened

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

	// What Poll returns when next has no line.
	status operator.Status
	wait   <-chan struct{}
	err    error
}

func (c *lineReader) fail(err error) (string, bool) {
	c.status, c.wait, c.err = 0, nil, err
	return "", false
}

// assign keeps the splits j with j mod parallelism == subtask.
func (c *lineReader) assign(all []Split, ctx *operator.Context) {
	for j, sp := range all {
		if j%ctx.Parallelism == ctx.Subtask {
			c.splits = append(c.splits, sp)
		}
	}
}

// next returns the next line. When ok is false there is none now, and
// c.status, c.wait and c.err are what Poll returns.
func (c *lineReader) next() (line string, ok bool) {
	for {
		switch {
		case c.f != nil:
			if c.pos >= c.end {
				c.closeFile()
				continue
			}
			line, n, err := readLine(c.r)
			c.pos += int64(n)
			if err != nil && err != io.EOF {
				return c.fail(c.readError(err))
			}
			if err == io.EOF {
				c.closeFile()
				if len(line) == 0 {
					continue
				}
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
				continue
			}
			c.status, c.wait, c.err = operator.NothingAvailable, c.s.ready, nil
			return "", false
		}
		if len(c.splits) == 0 {
			c.status, c.wait, c.err = operator.EndOfInput, nil, nil
			return "", false
		}
		sp := c.splits[0]
		c.splits = c.splits[1:]
		if err := c.open(sp); err != nil {
			return c.fail(err)
		}
	}
}

// open starts reading a split: a streamed one on its own goroutine, else
// positioned at the first line that starts in the split.
func (c *lineReader) open(sp Split) error {
	c.name, c.start, c.number = sp.Path, sp.Start, 0
	if sp.Stream {
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
	c.pos = sp.Start
	if sp.Start > 0 {
		// The line that contains byte Start-1 belongs to the previous split.
		c.pos = sp.Start - 1
	}
	if _, err := f.Seek(c.pos, io.SeekStart); err != nil {
		return fmt.Errorf("file source: %s: %w", sp.Path, err)
	}
	if c.r == nil {
		c.r = bufio.NewReaderSize(f, 256<<10)
	} else {
		c.r.Reset(f)
	}
	if sp.Start > 0 {
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
