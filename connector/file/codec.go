package file

import (
	"encoding/binary"
	"fmt"

	"github.com/weirhq/weir/codec"
)

// formatVersion is the first byte of every encoding this package stores in
// checkpoints (splits, the enumerator's state, committables), so the
// formats can change without misreading old checkpoints.
const formatVersion = 1

// Split flags.
const (
	flagStream  = 1 << 0
	flagStarted = 1 << 1
)

// splitCodec encodes a Split as the version byte, the path (uvarint length
// and bytes), a flags byte, then Start, End, Offset and Lines as uvarints.
type splitCodec struct{}

func (splitCodec) AppendEncode(dst []byte, s Split) []byte {
	dst = append(dst, formatVersion)
	dst = appendString(dst, s.Path)
	var flags byte
	if s.Stream {
		flags |= flagStream
	}
	if s.Started {
		flags |= flagStarted
	}
	dst = append(dst, flags)
	for _, v := range [...]int64{s.Start, s.End, s.Offset, s.Lines} {
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	return dst
}

func (splitCodec) Decode(src []byte) (Split, int, error) {
	d := decoder{b: src}
	if v := d.byte(); d.err == nil && v != formatVersion {
		return Split{}, 0, fmt.Errorf("%w: file split format version %d, want %d", codec.ErrCorrupt, v, formatVersion)
	}
	var s Split
	s.Path = d.string()
	flags := d.byte()
	s.Stream, s.Started = flags&flagStream != 0, flags&flagStarted != 0
	s.Start, s.End, s.Offset, s.Lines = d.int(), d.int(), d.int(), d.int()
	if d.err != nil {
		return Split{}, 0, d.err
	}
	if flags&^(flagStream|flagStarted) != 0 || s.Start > s.End || (s.Started && !s.Stream && (s.Offset < s.Start || s.Offset > s.End)) {
		return Split{}, 0, fmt.Errorf("%w: file split %+v", codec.ErrCorrupt, s)
	}
	return s, d.n, nil
}

// appendString appends s as its uvarint length and its bytes.
func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads the fields of an encoding; the first error sticks.
type decoder struct {
	b   []byte
	n   int
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.n >= len(d.b) {
		d.err = codec.ErrTruncated
		return 0
	}
	d.n++
	return d.b[d.n-1]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b[d.n:])
	switch {
	case k == 0:
		d.err = codec.ErrTruncated
	case k < 0:
		d.err = fmt.Errorf("%w: varint overflows 64 bits", codec.ErrCorrupt)
	}
	d.n += max(k, 0)
	return v
}

// int reads a non-negative int64.
func (d *decoder) int() int64 {
	v := d.uvarint()
	if d.err == nil && v > 1<<63-1 {
		d.err = fmt.Errorf("%w: offset beyond int64", codec.ErrCorrupt)
	}
	return int64(v)
}

func (d *decoder) string() string {
	l := d.uvarint()
	if d.err != nil {
		return ""
	}
	if l > uint64(len(d.b)-d.n) {
		d.err = codec.ErrTruncated
		return ""
	}
	s := string(d.b[d.n : d.n+int(l)])
	d.n += int(l)
	return s
}

// enumeratorVersion is the first byte of the enumerator's state: 1 for
// the splits not handed out only (Weir before it recorded its input), 2
// for the input's root, the files listed (each its path, a flags byte and
// its size) and the splits, each list after its uvarint count.
const enumeratorVersion = 2

const fileStream = 1 << 0

// encodeEnumeratorState encodes st as enumeratorVersion.
func encodeEnumeratorState(st enumeratorState) []byte {
	b := []byte{enumeratorVersion}
	b = appendString(b, st.Root)
	b = binary.AppendUvarint(b, uint64(len(st.Files)))
	for _, f := range st.Files {
		b = appendString(b, f.path)
		var flags byte
		if f.stream {
			flags |= fileStream
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(f.size))
	}
	return appendSplitList(b, st.Left)
}

// decodeEnumeratorState decodes both versions of the enumerator's state.
func decodeEnumeratorState(b []byte) (enumeratorState, error) {
	d := decoder{b: b}
	v := d.byte()
	if d.err == nil && v != formatVersion && v != enumeratorVersion {
		return enumeratorState{}, fmt.Errorf("%w: file enumerator state version %d, want 1 or %d", codec.ErrCorrupt, v, enumeratorVersion)
	}
	var st enumeratorState
	if v == enumeratorVersion {
		st.Root = d.string()
		n := d.count()
		for i := uint64(0); i < n && d.err == nil; i++ {
			in := input{path: d.string()}
			flags := d.byte()
			in.stream, in.size = flags&fileStream != 0, d.int()
			if d.err == nil && flags&^fileStream != 0 {
				d.err = fmt.Errorf("%w: file enumerator state file flags %#x", codec.ErrCorrupt, flags)
			}
			st.Files = append(st.Files, in)
		}
		if d.err == nil && st.Root == "" {
			d.err = fmt.Errorf("%w: file enumerator state without its input", codec.ErrCorrupt)
		}
	}
	n := d.count()
	if d.err != nil {
		return enumeratorState{}, d.err
	}
	b = b[d.n:]
	st.Left = make([]Split, 0, n)
	for range n {
		s, k, err := splitCodec{}.Decode(b)
		if err != nil {
			return enumeratorState{}, err
		}
		st.Left = append(st.Left, s)
		b = b[k:]
	}
	if len(b) != 0 {
		return enumeratorState{}, fmt.Errorf("%w: %d trailing bytes in the file enumerator state", codec.ErrCorrupt, len(b))
	}
	return st, nil
}

// count reads the length of a list, each element at least one byte long.
func (d *decoder) count() uint64 {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)-d.n) {
		d.err = codec.ErrTruncated
	}
	return n
}

// appendSplitList appends a uvarint count and the splits.
func appendSplitList(b []byte, splits []Split) []byte {
	b = binary.AppendUvarint(b, uint64(len(splits)))
	for _, s := range splits {
		b = splitCodec{}.AppendEncode(b, s)
	}
	return b
}

// committableVersion is the first byte of an encoded Committable: 1 for
// the two names only (checkpoints of Weir before commit markers), 2 for
// the names, Dir, a flags byte (committableOpen), Checkpoint and Length,
// 3 for those (flags with committableHeld too), then Sources (a uvarint
// count and the names). Committables without compaction fields are
// written as version 2, which Weir before compaction reads.
const committableVersion = 3

const (
	committableOpen = 1 << 0
	committableHeld = 1 << 1
)

// committableCodec encodes a Committable (see committableVersion); it
// decodes every version.
type committableCodec struct{}

func (committableCodec) AppendEncode(dst []byte, c Committable) []byte {
	v := byte(2)
	if c.Held || len(c.Sources) > 0 {
		v = committableVersion
	}
	dst = append(dst, v)
	for _, s := range [...]string{c.InProgress, c.Final, c.Dir} {
		dst = appendString(dst, s)
	}
	var flags byte
	if c.Open {
		flags |= committableOpen
	}
	if c.Held {
		flags |= committableHeld
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(c.Checkpoint))
	dst = binary.AppendUvarint(dst, uint64(c.Length))
	if v < committableVersion {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(c.Sources)))
	for _, s := range c.Sources {
		dst = appendString(dst, s)
	}
	return dst
}

func (committableCodec) Decode(src []byte) (Committable, int, error) {
	d := decoder{b: src}
	v := d.byte()
	if d.err == nil && (v < 1 || v > committableVersion) {
		return Committable{}, 0, fmt.Errorf("%w: file sink committable version %d, want 1 to %d", codec.ErrCorrupt, v, committableVersion)
	}
	c := Committable{InProgress: d.string(), Final: d.string()}
	if v >= 2 {
		c.Dir = d.string()
		flags := d.byte()
		c.Open = flags&committableOpen != 0
		c.Checkpoint, c.Length = d.int(), d.int()
		known := byte(committableOpen)
		if v >= 3 {
			known |= committableHeld
			c.Held = flags&committableHeld != 0
			n := d.count()
			for i := uint64(0); i < n && d.err == nil; i++ {
				c.Sources = append(c.Sources, d.string())
			}
		}
		if d.err == nil && flags&^known != 0 {
			return Committable{}, 0, fmt.Errorf("%w: file sink committable flags %#x", codec.ErrCorrupt, flags)
		}
	}
	if d.err != nil {
		return Committable{}, 0, d.err
	}
	return c, d.n, nil
}
