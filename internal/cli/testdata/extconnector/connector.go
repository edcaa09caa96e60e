// Package extconnector is a connector written outside Weir's module, on its
// public contracts only: a source of text lines from files (a split per
// file, its byte offset as position) and a two-phase-commit sink that
// writes files into a directory and renames them into place on commit.
// Weir's tests build it as a separate module to prove that the contracts
// can be implemented from outside and give exactly-once results.
package extconnector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/sink"
	"github.com/weirhq/weir/source"
)

// FileSplit is one file and the offset of its next unread line.
type FileSplit struct {
	Path   string
	Offset int64
}

type splitCodec struct{}

func (splitCodec) AppendEncode(dst []byte, s FileSplit) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s.Path)))
	dst = append(dst, s.Path...)
	return binary.AppendVarint(dst, s.Offset)
}

func (splitCodec) Decode(b []byte) (FileSplit, int, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return FileSplit{}, 0, errors.New("extconnector: corrupt split")
	}
	path := string(b[k : k+int(n)])
	off, k2 := binary.Varint(b[k+int(n):])
	if k2 <= 0 {
		return FileSplit{}, 0, errors.New("extconnector: corrupt split")
	}
	return FileSplit{Path: path, Offset: off}, k + int(n) + k2, nil
}

// Lines reads the lines of every file in Dir, at most RatePerSecond a second.
type Lines struct {
	Dir           string
	RatePerSecond float64
}

func (Lines) Boundedness() source.Boundedness    { return source.Bounded }
func (Lines) SplitCodec() codec.Codec[FileSplit] { return splitCodec{} }
func (l Lines) CreateReader(ctx source.ReaderContext) (source.Reader[string, FileSplit], error) {
	return &lineReader{ctx: ctx, rate: l.RatePerSecond / float64(ctx.Parallelism()), start: ctx.Clock().Now()}, nil
}

// CreateEnumerator lists the files and hands one out per request; its
// state is the files not handed out, one per line.
func (l Lines) CreateEnumerator(ctx source.EnumeratorContext[FileSplit], restored []byte) (source.Enumerator[FileSplit], error) {
	e := &enumerator{ctx: ctx}
	if restored != nil {
		if len(restored) > 0 {
			e.left = strings.Split(string(restored), "\n")
		}
		return e, nil
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return nil, err
	}
	for _, en := range entries {
		if !strings.HasPrefix(en.Name(), ".") {
			e.left = append(e.left, filepath.Join(l.Dir, en.Name()))
		}
	}
	sort.Strings(e.left)
	return e, nil
}

type enumerator struct {
	ctx  source.EnumeratorContext[FileSplit]
	left []string
}

func (e *enumerator) Start() error                   { return nil }
func (e *enumerator) AddReader(int) error            { return nil }
func (e *enumerator) Close() error                   { return nil }
func (e *enumerator) Snapshot(int64) ([]byte, error) { return []byte(strings.Join(e.left, "\n")), nil }

func (e *enumerator) HandleSplitRequest(subtask int) error {
	if len(e.left) == 0 {
		e.ctx.NoMoreSplits(subtask)
		return nil
	}
	e.ctx.Assign(subtask, FileSplit{Path: e.left[0]})
	e.left = e.left[1:]
	return nil
}

type lineReader struct {
	ctx     source.ReaderContext
	splits  []FileSplit
	cur     *FileSplit
	f       *os.File
	r       *bufio.Reader
	asked   bool
	noMore  bool
	rate    float64 // lines per second for this reader
	start   time.Time
	emitted int64
}

func (r *lineReader) Start() error                         { return nil }
func (r *lineReader) AddSplits(s []FileSplit)              { r.splits = append(r.splits, s...); r.asked = false }
func (r *lineReader) NoMoreSplits()                        { r.noMore = true }
func (r *lineReader) NotifyCheckpointComplete(int64) error { return nil }

func (r *lineReader) SnapshotState(int64) ([]FileSplit, error) {
	out := append([]FileSplit(nil), r.splits...)
	if r.cur != nil {
		out = append([]FileSplit{*r.cur}, out...)
	}
	return out, nil
}

func (r *lineReader) Close() error {
	if r.f != nil {
		return r.f.Close()
	}
	return nil
}

func (r *lineReader) PollNext(out source.Output[string]) (source.Status, <-chan struct{}, time.Duration, error) {
	if r.rate > 0 {
		due := int64(r.ctx.Clock().Now().Sub(r.start).Seconds()*r.rate) + 1
		if due <= r.emitted {
			return source.NothingAvailable, nil, time.Duration(math.Ceil(1000/r.rate)) * time.Millisecond, nil
		}
	}
	for range 64 {
		if r.cur == nil {
			if len(r.splits) == 0 {
				if r.noMore {
					return source.EndOfInput, nil, 0, nil
				}
				if !r.asked {
					r.asked = true
					r.ctx.RequestSplit()
				}
				return source.NothingAvailable, nil, time.Millisecond, nil
			}
			sp := r.splits[0]
			r.splits = r.splits[1:]
			f, err := os.Open(sp.Path)
			if err != nil {
				return 0, nil, 0, err
			}
			if _, err := f.Seek(sp.Offset, io.SeekStart); err != nil {
				return 0, nil, 0, err
			}
			r.cur, r.f, r.r = &sp, f, bufio.NewReader(f)
		}
		line, err := r.r.ReadString('\n')
		if len(line) > 0 && strings.HasSuffix(line, "\n") {
			r.cur.Offset += int64(len(line))
			out.Collect(strings.TrimSuffix(line, "\n"))
			r.emitted++
			if out.ShouldYield() || r.rate > 0 && r.emitted >= int64(r.ctx.Clock().Now().Sub(r.start).Seconds()*r.rate)+1 {
				return source.MoreAvailable, nil, 0, nil
			}
			continue
		}
		if err == io.EOF {
			r.f.Close()
			r.cur, r.f = nil, nil
			continue
		}
		if err != nil {
			return 0, nil, 0, err
		}
	}
	return source.MoreAvailable, nil, 0, nil
}

// Pending is a file written and not yet committed.
type Pending struct{ Temp, Final string }

type pendingCodec struct{}

func (pendingCodec) AppendEncode(dst []byte, p Pending) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p.Temp)))
	dst = append(dst, p.Temp...)
	dst = binary.AppendUvarint(dst, uint64(len(p.Final)))
	return append(dst, p.Final...)
}

func (pendingCodec) Decode(b []byte) (Pending, int, error) {
	var p Pending
	pos := 0
	for _, f := range []*string{&p.Temp, &p.Final} {
		n, k := binary.Uvarint(b[pos:])
		if k <= 0 || n > uint64(len(b)-pos-k) {
			return Pending{}, 0, errors.New("extconnector: corrupt committable")
		}
		*f = string(b[pos+k : pos+k+int(n)])
		pos += k + int(n)
	}
	return p, pos, nil
}

// Files writes lines into files of Dir, exactly once: each checkpoint's
// lines go to a hidden file that is renamed into place on commit.
type Files struct{ Dir string }

func (Files) CommittableCodec() codec.Codec[Pending] { return pendingCodec{} }

func (f Files) CreateWriter(ctx sink.Context) (sink.CommittingWriter[string, Pending], error) {
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, err
	}
	return &fileWriter{dir: f.Dir, ctx: ctx, run: time.Now().UnixNano()}, nil
}

func (f Files) CreateCommitter(sink.Context) (sink.Committer[Pending], error) {
	return committer{dir: f.Dir}, nil
}

type fileWriter struct {
	dir  string
	ctx  sink.Context
	run  int64
	n    int
	f    *os.File
	w    *bufio.Writer
	name string
}

func (w *fileWriter) Write(line string, _ int64) error {
	if w.f == nil {
		w.name = fmt.Sprintf("out-%d-%d-%d", w.run, w.ctx.Subtask(), w.n)
		w.n++
		f, err := os.Create(filepath.Join(w.dir, "."+w.name))
		if err != nil {
			return err
		}
		w.f, w.w = f, bufio.NewWriter(f)
	}
	_, err := w.w.WriteString(line + "\n")
	return err
}

func (w *fileWriter) Flush(bool) error {
	if w.w != nil {
		return w.w.Flush()
	}
	return nil
}

func (w *fileWriter) PrepareCommit() ([]Pending, error) {
	if w.f == nil {
		return nil, nil
	}
	if err := w.w.Flush(); err != nil {
		return nil, err
	}
	if err := w.f.Sync(); err != nil {
		return nil, err
	}
	if err := w.f.Close(); err != nil {
		return nil, err
	}
	w.f = nil
	return []Pending{{Temp: "." + w.name, Final: w.name}}, nil
}

func (w *fileWriter) Close() error {
	if w.f != nil {
		w.f.Close()
		os.Remove(w.f.Name())
	}
	return nil
}

type committer struct{ dir string }

func (c committer) Close() error { return nil }

// Commit renames each file into place; one already renamed is done.
func (c committer) Commit(ps []Pending) error {
	for _, p := range ps {
		err := os.Rename(filepath.Join(c.dir, p.Temp), filepath.Join(c.dir, p.Final))
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(filepath.Join(c.dir, p.Final)); serr == nil {
				continue
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
