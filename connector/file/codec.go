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

// encodeSplitList encodes the enumerator's splits: the version byte, a
// uvarint count, then the splits.
func encodeSplitList(splits []Split) []byte {
	b := []byte{formatVersion}
	b = binary.AppendUvarint(b, uint64(len(splits)))
	for _, s := range splits {
		b = splitCodec{}.AppendEncode(b, s)
	}
	return b
}

func decodeSplitList(b []byte) ([]Split, error) {
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != formatVersion {
		return nil, fmt.Errorf("%w: file enumerator state version %d, want %d", codec.ErrCorrupt, v, formatVersion)
	}
	n := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if n > uint64(len(b)) {
		return nil, codec.ErrTruncated
	}
	b = b[d.n:]
	out := make([]Split, 0, n)
	for range n {
		s, k, err := splitCodec{}.Decode(b)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		b = b[k:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes in the file enumerator state", codec.ErrCorrupt, len(b))
	}
	return out, nil
}

// committableVersion is the first byte of an encoded Committable: 1 for
// the two names only (checkpoints of Weir before commit markers), 2 for
// the names, Dir, a flags byte (committableOpen), Checkpoint and Length.
const committableVersion = 2

const committableOpen = 1 << 0

// committableCodec encodes a Committable (see committableVersion); it
// decodes both versions.
type committableCodec struct{}

func (committableCodec) AppendEncode(dst []byte, c Committable) []byte {
	dst = append(dst, committableVersion)
	for _, s := range [...]string{c.InProgress, c.Final, c.Dir} {
		dst = appendString(dst, s)
	}
	var flags byte
	if c.Open {
		flags |= committableOpen
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(c.Checkpoint))
	return binary.AppendUvarint(dst, uint64(c.Length))
}

func (committableCodec) Decode(src []byte) (Committable, int, error) {
	d := decoder{b: src}
	v := d.byte()
	if d.err == nil && v != 1 && v != committableVersion {
		return Committable{}, 0, fmt.Errorf("%w: file sink committable version %d, want 1 or %d", codec.ErrCorrupt, v, committableVersion)
	}
	c := Committable{InProgress: d.string(), Final: d.string()}
	if v == committableVersion {
		c.Dir = d.string()
		flags := d.byte()
		c.Open = flags&committableOpen != 0
		c.Checkpoint, c.Length = d.int(), d.int()
		if d.err == nil && flags&^committableOpen != 0 {
			return Committable{}, 0, fmt.Errorf("%w: file sink committable flags %#x", codec.ErrCorrupt, flags)
		}
	}
	if d.err != nil {
		return Committable{}, 0, d.err
	}
	return c, d.n, nil
}
