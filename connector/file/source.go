package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weirhq/weir/internal/operator"
)

// Split is a byte range of one file. A split owns every line that starts in
// [Start, End); the line starting at End belongs to the next split.
type Split struct {
	Path       string
	Start, End int64
}

// TextSource reads the lines of a file, or of every regular non-hidden file of
// a directory, without their line endings (\n or \r\n).
type TextSource struct {
	Path string
	// SplitSize is the largest split in bytes (0: chosen from the input size
	// and parallelism so every subtask gets work).
	SplitSize int64
}

// Splits lists the splits of the input for a source of the given parallelism,
// in a deterministic order.
func (s TextSource) Splits(parallelism int) ([]Split, error) {
	files, err := listFiles(s.Path)
	if err != nil {
		return nil, err
	}
	var total int64
	sizes := make([]int64, len(files))
	for i, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("file source: %w", err)
		}
		sizes[i] = st.Size()
		total += st.Size()
	}
	size := s.SplitSize
	if size <= 0 {
		size = max(total/int64(parallelism*4)+1, 1<<20)
	}
	var out []Split
	for i, f := range files {
		for start := int64(0); start < sizes[i]; start += size {
			out = append(out, Split{Path: f, Start: start, End: min(start+size, sizes[i])})
		}
	}
	return out, nil
}

func listFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("file source: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("file source: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "_") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	slices.Sort(files)
	return files, nil
}

// NewReader implements the source contract.
func (s TextSource) NewReader() operator.SourceReader[string] { return &textReader{src: s} }

// textReader reads the splits j with j mod parallelism == subtask.
type textReader struct {
	src    TextSource
	splits []Split
	f      *os.File
	r      *bufio.Reader
	pos    int64 // offset of the next unread byte of the current split's file
	end    int64
	path   string
	line   int64 // lines read in the current split, for error messages
}

func (r *textReader) Open(ctx *operator.Context) error {
	all, err := r.src.Splits(ctx.Parallelism)
	if err != nil {
		return err
	}
	for j, sp := range all {
		if j%ctx.Parallelism == ctx.Subtask {
			r.splits = append(r.splits, sp)
		}
	}
	return nil
}

// open positions the reader at the first line that starts in the split.
func (r *textReader) open(sp Split) error {
	f, err := os.Open(sp.Path)
	if err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	r.f, r.path, r.end, r.line = f, sp.Path, sp.End, 0
	r.pos = sp.Start
	if sp.Start > 0 {
		// The line that contains byte Start-1 belongs to the previous split.
		r.pos = sp.Start - 1
	}
	if _, err := f.Seek(r.pos, io.SeekStart); err != nil {
		return fmt.Errorf("file source: %s: %w", sp.Path, err)
	}
	if r.r == nil {
		r.r = bufio.NewReaderSize(f, 256<<10)
	} else {
		r.r.Reset(f)
	}
	if sp.Start > 0 {
		skipped, err := r.r.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			r.pos += int64(len(skipped))
			skipped, err = r.r.ReadSlice('\n')
		}
		r.pos += int64(len(skipped))
		if err != nil && err != io.EOF {
			return fmt.Errorf("file source: %s: %w", sp.Path, err)
		}
	}
	return nil
}

func (r *textReader) Poll(out operator.Input[string]) (operator.Status, <-chan struct{}, int64, error) {
	for range 256 {
		if r.f == nil {
			if len(r.splits) == 0 {
				return operator.EndOfInput, nil, 0, nil
			}
			sp := r.splits[0]
			r.splits = r.splits[1:]
			if err := r.open(sp); err != nil {
				return 0, nil, 0, err
			}
		}
		if r.pos >= r.end {
			r.closeFile()
			continue
		}
		line, err := r.readLine()
		if err != nil && err != io.EOF {
			return 0, nil, 0, fmt.Errorf("file source: %s line %d of split: %w", r.path, r.line+1, err)
		}
		if len(line) > 0 || err == nil {
			r.line++
			out.ProcessElement(line, operator.NoTimestamp)
		}
		if err == io.EOF {
			r.closeFile()
		}
	}
	return operator.MoreAvailable, nil, 0, nil
}

// readLine reads one line without its ending and advances pos past it.
func (r *textReader) readLine() (string, error) {
	b, err := r.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = r.r.ReadSlice('\n')
			long = append(long, b...)
		}
		b = long
	}
	r.pos += int64(len(b))
	b = bytes.TrimSuffix(b, []byte{'\n'})
	b = bytes.TrimSuffix(b, []byte{'\r'})
	return string(b), err
}

func (r *textReader) closeFile() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

func (r *textReader) Close() error {
	r.closeFile()
	return nil
}
