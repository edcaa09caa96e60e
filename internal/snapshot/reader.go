package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/weirhq/weir/internal/keygroup"
)

// CorruptError says which part of a snapshot failed to decode, and why.
type CorruptError struct {
	Part   string // "header", "footer", "metadata chunk", "index chunk", "key group 7 chunk at offset 123", ...
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("snapshot: corrupt %s: %s", e.Part, e.Reason)
}

func corrupt(part, format string, args ...any) error {
	return &CorruptError{Part: part, Reason: fmt.Sprintf(format, args...)}
}

// Reader reads a canonical snapshot through an io.ReaderAt. It reads the
// header, metadata and index when opened, and key-group chunks on demand.
type Reader struct {
	r      io.ReaderAt
	size   int64
	header Header
	states []StateMeta
	index  []indexEntry
	groups map[int][]indexEntry
	timers func(kg int, kind Kind, e Entry) error // see SetTimerReader
}

// SetTimerReader makes ReadKeyGroup hand the entries of timer states
// (Kind.IsTimers) to fn instead of its own callback, so that one pass over
// a snapshot restores keyed state and timers together: a second pass would
// read and check every chunk again for the few timer entries.
func (sr *Reader) SetTimerReader(fn func(kg int, kind Kind, e Entry) error) { sr.timers = fn }

// Open checks the header, footer, metadata and index of the snapshot.
func Open(r io.ReaderAt, size int64) (*Reader, error) {
	if size < headerSize+footerSize {
		return nil, corrupt("file", "size %d is smaller than header and footer", size)
	}
	var hb [headerSize]byte
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		return nil, fmt.Errorf("snapshot: reading header: %w", err)
	}
	if string(hb[:8]) != headerMagic {
		return nil, corrupt("header", "bad magic %q", hb[:8])
	}
	if got, want := crc32.Checksum(hb[:32], castagnoli), binary.BigEndian.Uint32(hb[32:]); got != want {
		return nil, corrupt("header", "checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	v := int(binary.BigEndian.Uint16(hb[8:]))
	if v < minVersion || v > Version {
		return nil, corrupt("header", "unsupported format version %d (this build reads %d to %d)", v, minVersion, Version)
	}
	sr := &Reader{r: r, size: size, groups: map[int][]indexEntry{}}
	sr.header = Header{
		Version:        v,
		MaxParallelism: int(binary.BigEndian.Uint32(hb[12:])),
		Range:          keygroup.Range{Start: int(int32(binary.BigEndian.Uint32(hb[16:]))), End: int(int32(binary.BigEndian.Uint32(hb[20:])))},
		CheckpointID:   int64(binary.BigEndian.Uint64(hb[24:])),
	}
	if h := sr.header; h.MaxParallelism < 1 || h.MaxParallelism > keygroup.UpperBoundMaxParallelism ||
		h.Range.Start < 0 || h.Range.End >= h.MaxParallelism {
		return nil, corrupt("header", "max parallelism %d with key-group range %v is invalid", h.MaxParallelism, h.Range)
	}
	var fb [footerSize]byte
	if _, err := r.ReadAt(fb[:], size-footerSize); err != nil {
		return nil, fmt.Errorf("snapshot: reading footer: %w", err)
	}
	if string(fb[8:16]) != footerMagic {
		return nil, corrupt("footer", "bad magic %q (truncated file?)", fb[8:16])
	}
	if got, want := crc32.Checksum(fb[:16], castagnoli), binary.BigEndian.Uint32(fb[16:]); got != want {
		return nil, corrupt("footer", "checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	indexOff := int64(binary.BigEndian.Uint64(fb[:8]))
	if indexOff < headerSize || indexOff > size-footerSize {
		return nil, corrupt("footer", "index offset %d outside the file (size %d)", indexOff, size)
	}
	meta, _, err := sr.readChunk(headerSize, size-footerSize, chunkMeta, "metadata chunk")
	if err != nil {
		return nil, err
	}
	if err := sr.parseMeta(meta); err != nil {
		return nil, err
	}
	idx, _, err := sr.readChunk(indexOff, size-footerSize, chunkIndex, "index chunk")
	if err != nil {
		return nil, err
	}
	if err := sr.parseIndex(idx, indexOff); err != nil {
		return nil, err
	}
	return sr, nil
}

// readChunk reads the chunk at off, which must end at or before limit.
func (sr *Reader) readChunk(off, limit int64, typ byte, part string) ([]byte, int64, error) {
	var h [5]byte
	if off+5+4 > limit {
		return nil, 0, corrupt(part, "chunk at offset %d runs past %d", off, limit)
	}
	if _, err := sr.r.ReadAt(h[:], off); err != nil {
		return nil, 0, fmt.Errorf("snapshot: reading %s: %w", part, err)
	}
	if h[0] != typ {
		return nil, 0, corrupt(part, "chunk type %q at offset %d, want %q", h[0], off, typ)
	}
	n := int64(binary.BigEndian.Uint32(h[1:]))
	if off+5+n+4 > limit {
		return nil, 0, corrupt(part, "chunk length %d at offset %d runs past %d", n, off, limit)
	}
	b := make([]byte, n+4)
	if _, err := sr.r.ReadAt(b, off+5); err != nil {
		return nil, 0, fmt.Errorf("snapshot: reading %s: %w", part, err)
	}
	crc := crc32.Update(crc32.Checksum(h[:], castagnoli), castagnoli, b[:n])
	if want := binary.BigEndian.Uint32(b[n:]); crc != want {
		return nil, 0, corrupt(part, "checksum mismatch (computed %08x, stored %08x)", crc, want)
	}
	return b[:n], 5 + n + 4, nil
}

// dec is a bounds-checked decoder over one chunk payload.
type dec struct {
	b    []byte
	part string
	err  error
}

func (d *dec) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = corrupt(d.part, "bad %s varint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = corrupt(d.part, "bad %s varint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) byte1(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.err = corrupt(d.part, "truncated before %s", what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) bytes(what string) []byte {
	if d.err != nil {
		return nil
	}
	// The length's varint is read here rather than by uvarint, so that the
	// name "<what> length" is only built for an error (not per entry).
	n, w := binary.Uvarint(d.b)
	if w <= 0 {
		d.err = corrupt(d.part, "bad %s length varint", what)
		return nil
	}
	d.b = d.b[w:]
	if n > uint64(len(d.b)) {
		d.err = corrupt(d.part, "%s length %d exceeds remaining %d bytes", what, n, len(d.b))
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func (sr *Reader) parseMeta(p []byte) error {
	d := &dec{b: p, part: "metadata chunk"}
	n := d.uvarint("state count")
	if n > uint64(len(p)) {
		return corrupt(d.part, "state count %d exceeds chunk size", n)
	}
	seen := map[string]bool{}
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := string(d.bytes("state name"))
		k := Kind(d.byte1("state kind"))
		ttl := d.varint("ttl")
		upd := TTLUpdate(d.byte1("ttl update"))
		var cdc, schema, keySchema string
		if sr.header.Version >= 2 {
			cdc = string(d.bytes("codec"))
		}
		if sr.header.Version >= 3 {
			schema, keySchema = string(d.bytes("schema")), string(d.bytes("key schema"))
		}
		if d.err != nil {
			break
		}
		if k == 0 || k > maxKind {
			return corrupt(d.part, "state %q has unknown kind %d", name, k)
		}
		if ttl < 0 || upd > TTLOnReadAndWrite {
			return corrupt(d.part, "state %q has invalid TTL settings (%d ms, update %d)", name, ttl, upd)
		}
		if seen[name] {
			return corrupt(d.part, "state %q listed twice", name)
		}
		seen[name] = true
		sr.states = append(sr.states, StateMeta{Name: name, Kind: k, TTLMillis: ttl, TTLUpdate: upd, Codec: cdc,
			Schema: schema, KeySchema: keySchema})
	}
	if d.err == nil && len(d.b) != 0 {
		return corrupt(d.part, "%d trailing bytes", len(d.b))
	}
	return d.err
}

func (sr *Reader) parseIndex(p []byte, indexOff int64) error {
	d := &dec{b: p, part: "index chunk"}
	n := d.uvarint("chunk count")
	if n > uint64(len(p)) {
		return corrupt(d.part, "chunk count %d exceeds index size", n)
	}
	prevKG, prevEnd := -1, int64(0)
	for i := uint64(0); i < n && d.err == nil; i++ {
		kg := d.uvarint("key group")
		off := d.uvarint("offset")
		ln := d.uvarint("length")
		if d.err != nil {
			break
		}
		if kg > uint64(sr.header.Range.End) || int(kg) < sr.header.Range.Start || int(kg) < prevKG {
			return corrupt(d.part, "entry %d: key group %d out of order or outside %v", i, kg, sr.header.Range)
		}
		if off < uint64(headerSize) || ln > uint64(indexOff) || off+ln > uint64(indexOff) || int64(off) < prevEnd {
			return corrupt(d.part, "entry %d: chunk [%d, +%d) overlaps or lies outside the data section", i, off, ln)
		}
		ie := indexEntry{kg: int(kg), offset: int64(off), length: int64(ln)}
		sr.index = append(sr.index, ie)
		sr.groups[ie.kg] = append(sr.groups[ie.kg], ie)
		prevKG, prevEnd = ie.kg, ie.offset+ie.length
	}
	if d.err == nil && len(d.b) != 0 {
		return corrupt(d.part, "%d trailing bytes", len(d.b))
	}
	return d.err
}

// Header returns the snapshot's header.
func (sr *Reader) Header() Header { return sr.header }

// States returns the metadata of the snapshot's states; Entry.State indexes it.
func (sr *Reader) States() []StateMeta { return sr.states }

// KeyGroups returns the key groups that have entries, in increasing order.
func (sr *Reader) KeyGroups() []int {
	var out []int
	for _, ie := range sr.index {
		if len(out) == 0 || out[len(out)-1] != ie.kg {
			out = append(out, ie.kg)
		}
	}
	return out
}

// ReadKeyGroup calls fn for every entry of key group kg, in written order,
// verifying each chunk's checksum. It reads nothing for absent key groups.
func (sr *Reader) ReadKeyGroup(kg int, fn func(Entry) error) error {
	for _, ie := range sr.groups[kg] {
		part := fmt.Sprintf("key group %d chunk at offset %d", kg, ie.offset)
		p, n, err := sr.readChunk(ie.offset, ie.offset+ie.length, chunkGroup, part)
		if err != nil {
			return err
		}
		if n != ie.length {
			return corrupt(part, "chunk is %d bytes, index says %d", n, ie.length)
		}
		d := &dec{b: p, part: part}
		if got := d.uvarint("key group"); d.err == nil && got != uint64(kg) {
			return corrupt(part, "chunk holds key group %d", got)
		}
		for d.err == nil && len(d.b) > 0 {
			var e Entry
			e.State = int(d.uvarint("state index"))
			flags := d.byte1("flags")
			e.Key = d.bytes("key")
			e.Namespace = d.bytes("namespace")
			if flags&flagUserKey != 0 {
				e.HasUserKey = true
				e.UserKey = d.bytes("user key")
			}
			e.Value = d.bytes("value")
			if flags&flagTS != 0 {
				e.HasTS = true
				e.TS = d.varint("ttl timestamp")
			}
			if d.err != nil {
				break
			}
			if flags&^(flagUserKey|flagTS) != 0 {
				return corrupt(part, "unknown entry flags %#x", flags)
			}
			if e.State < 0 || e.State >= len(sr.states) {
				return corrupt(part, "entry refers to state %d of %d", e.State, len(sr.states))
			}
			if k := sr.states[e.State].Kind; sr.timers != nil && k.IsTimers() {
				if err := sr.timers(kg, k, e); err != nil {
					return err
				}
			} else if err := fn(e); err != nil {
				return err
			}
		}
		if d.err != nil {
			return d.err
		}
	}
	return nil
}
