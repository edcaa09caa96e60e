package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/weirhq/weir/internal/keygroup"
)

// Version is the format version this package writes. Readers accept only
// versions they know; a new version keeps a golden file of the old one.
// Version 2 added each state's codec identity (StateMeta.Codec) to the
// metadata chunk; version 1 files still decode, with no codec recorded.
// Version 3 added each state's schemas (StateMeta.Schema, KeySchema);
// version 2 files decode with none recorded, and restore as before.
const Version = 3

// minVersion is the oldest format version the reader accepts.
const minVersion = 1

// ChunkTarget is the payload size after which a key group's entries continue
// in a new chunk.
const ChunkTarget = 1 << 20

const (
	headerMagic = "WEIRKGS\x00"
	footerMagic = "WEIRKGSE"
	headerSize  = 36
	footerSize  = 20

	chunkMeta  = 'M'
	chunkGroup = 'G'
	chunkIndex = 'I'

	flagUserKey = 1
	flagTS      = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header identifies a snapshot: which key groups it covers, out of how many.
type Header struct {
	Version        int
	MaxParallelism int
	Range          keygroup.Range
	CheckpointID   int64
}

type indexEntry struct {
	kg     int
	offset int64
	length int64
}

// Writer streams a canonical snapshot to an io.Writer.
type Writer struct {
	w       *bufio.Writer
	off     int64
	states  []StateMeta
	index   []indexEntry
	buf     []byte // payload of the current 'G' chunk, after its key group
	curKG   int
	lastKG  int
	done    bool
	scratch []byte
}

// NewWriter writes the header and the metadata chunk.
func NewWriter(w io.Writer, h Header, states []StateMeta) (*Writer, error) {
	sw := &Writer{w: bufio.NewWriterSize(w, 256<<10), states: states, curKG: -1, lastKG: -1}
	var hb [headerSize]byte
	copy(hb[:8], headerMagic)
	binary.BigEndian.PutUint16(hb[8:], Version)
	binary.BigEndian.PutUint32(hb[12:], uint32(h.MaxParallelism))
	binary.BigEndian.PutUint32(hb[16:], uint32(h.Range.Start))
	binary.BigEndian.PutUint32(hb[20:], uint32(h.Range.End))
	binary.BigEndian.PutUint64(hb[24:], uint64(h.CheckpointID))
	binary.BigEndian.PutUint32(hb[32:], crc32.Checksum(hb[:32], castagnoli))
	if err := sw.write(hb[:]); err != nil {
		return nil, err
	}
	var p []byte
	p = binary.AppendUvarint(p, uint64(len(states)))
	for _, s := range states {
		p = appendBytes(p, []byte(s.Name))
		p = append(p, byte(s.Kind))
		p = binary.AppendVarint(p, s.TTLMillis)
		p = append(p, byte(s.TTLUpdate))
		p = appendBytes(p, []byte(s.Codec))
		p = appendBytes(p, []byte(s.Schema))
		p = appendBytes(p, []byte(s.KeySchema))
	}
	if err := sw.chunk(chunkMeta, p); err != nil {
		return nil, err
	}
	return sw, nil
}

func (sw *Writer) write(b []byte) error {
	n, err := sw.w.Write(b)
	sw.off += int64(n)
	return err
}

func (sw *Writer) chunk(typ byte, payload []byte) error {
	h := append(sw.scratch[:0], typ, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(h, castagnoli), castagnoli, payload)
	if err := sw.write(h); err != nil {
		return err
	}
	if err := sw.write(payload); err != nil {
		return err
	}
	var c [4]byte
	binary.BigEndian.PutUint32(c[:], crc)
	sw.scratch = h
	return sw.write(c[:])
}

// Add appends an entry of key group kg. Key groups must come in increasing
// order; all entries of a key group are added before the next one.
func (sw *Writer) Add(kg int, e Entry) error {
	if sw.done {
		return errors.New("snapshot: Add after Close")
	}
	if e.State < 0 || e.State >= len(sw.states) {
		return fmt.Errorf("snapshot: entry for state index %d, have %d states", e.State, len(sw.states))
	}
	if kg != sw.curKG {
		if kg <= sw.lastKG {
			return fmt.Errorf("snapshot: key group %d added after key group %d", kg, sw.lastKG)
		}
		if err := sw.flush(); err != nil {
			return err
		}
		sw.curKG, sw.lastKG = kg, kg
		sw.buf = binary.AppendUvarint(sw.buf[:0], uint64(kg))
	}
	var flags byte
	if e.HasUserKey {
		flags |= flagUserKey
	}
	if e.HasTS {
		flags |= flagTS
	}
	b := binary.AppendUvarint(sw.buf, uint64(e.State))
	b = append(b, flags)
	b = appendBytes(b, e.Key)
	b = appendBytes(b, e.Namespace)
	if e.HasUserKey {
		b = appendBytes(b, e.UserKey)
	}
	b = appendBytes(b, e.Value)
	if e.HasTS {
		b = binary.AppendVarint(b, e.TS)
	}
	sw.buf = b
	if len(sw.buf) >= ChunkTarget {
		kg := sw.curKG
		if err := sw.flush(); err != nil {
			return err
		}
		sw.curKG = kg
		sw.buf = binary.AppendUvarint(sw.buf[:0], uint64(kg))
	}
	return nil
}

// flush writes the pending 'G' chunk, if it has entries.
func (sw *Writer) flush() error {
	if sw.curKG < 0 {
		return nil
	}
	hdr := uvarintLen(uint64(sw.curKG))
	if len(sw.buf) > hdr {
		start := sw.off
		if err := sw.chunk(chunkGroup, sw.buf); err != nil {
			return err
		}
		sw.index = append(sw.index, indexEntry{kg: sw.curKG, offset: start, length: sw.off - start})
	}
	sw.curKG = -1
	sw.buf = sw.buf[:0]
	return nil
}

// Close writes the index and the footer and flushes; it returns the total size.
func (sw *Writer) Close() (int64, error) {
	if sw.done {
		return sw.off, nil
	}
	sw.done = true
	if err := sw.flush(); err != nil {
		return 0, err
	}
	indexOff := sw.off
	var p []byte
	p = binary.AppendUvarint(p, uint64(len(sw.index)))
	for _, ie := range sw.index {
		p = binary.AppendUvarint(p, uint64(ie.kg))
		p = binary.AppendUvarint(p, uint64(ie.offset))
		p = binary.AppendUvarint(p, uint64(ie.length))
	}
	if err := sw.chunk(chunkIndex, p); err != nil {
		return 0, err
	}
	var f [footerSize]byte
	binary.BigEndian.PutUint64(f[:8], uint64(indexOff))
	copy(f[8:16], footerMagic)
	binary.BigEndian.PutUint32(f[16:], crc32.Checksum(f[:16], castagnoli))
	if err := sw.write(f[:]); err != nil {
		return 0, err
	}
	return sw.off, sw.w.Flush()
}

// Write writes a whole snapshot of the sources for the key groups of h.Range.
// Entry.State is set to the source's index.
func Write(w io.Writer, h Header, sources []Source) (int64, error) {
	metas := make([]StateMeta, len(sources))
	for i, s := range sources {
		metas[i] = s.Meta()
	}
	sw, err := NewWriter(w, h, metas)
	if err != nil {
		return 0, err
	}
	for kg := h.Range.Start; kg <= h.Range.End; kg++ {
		for i, s := range sources {
			err := s.KeyGroup(kg, func(e Entry) error {
				e.State = i
				return sw.Add(kg, e)
			})
			if err != nil {
				return 0, err
			}
		}
	}
	return sw.Close()
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
