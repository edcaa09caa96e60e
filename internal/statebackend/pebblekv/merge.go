package pebblekv

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// listMerger concatenates merge operands, oldest first: list appends (an Add
// is one merge operand of one encoded element, see Table.Append).
//
// It replaces pebble.DefaultMerger, whose AppendValueMerger.MergeOlder copies
// the whole accumulated value for every older operand: reading (or
// compacting) a list built from n appends cost O(n^2) time and garbage.
// Pebble reads and compacts forward, newest operand first (Merge, then
// MergeOlder for each older one), which is the quadratic case. This merger
// copies each operand once and concatenates the copies once, in Finish:
// O(total bytes).
//
// The result is byte-identical to pebble.DefaultMerger's (concatenation in
// the same order), so it keeps its name, "pebble.concatenate": Pebble
// persists the merger name in the OPTIONS file and in every SST's
// properties and refuses to open a database or an SST written with a
// differently named merger. Databases, native savepoints and incremental
// checkpoints written with pebble.DefaultMerger open with this one, and the
// other way round (TestListMergerOpensDefaultMergerDB).
var listMerger = &pebble.Merger{
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &concatMerger{}
		m.add(value)
		return m, nil
	},
	Name: pebble.DefaultMerger.Name, // "pebble.concatenate"; see above
}

// concatMerger is the ValueMerger of listMerger. Pebble keeps ownership of
// the operands it passes (they may alias reused buffers), so each is copied
// once, to the end of arena (ends[i] is the end of piece i), and Finish
// concatenates the pieces once, in order. The pieces are in arrival order:
// all newer than the first (MergeNewer: arena is in order already) or all
// older (MergeOlder: newest first); Pebble never mixes the two in one merge
// (base.ValueMerger's contract), and the merger stays correct if it did.
//
// An older operand at least as large as everything so far (the list's base
// value, which a compaction or a read reaches last) is joined with the
// pieces at once, into one piece that Finish returns without another copy:
// the base is copied once, as by pebble.DefaultMerger. Each such join at
// least doubles the total, so joins cost O(total) altogether.
type concatMerger struct {
	arena []byte
	ends  []int // no pointers: nothing for the GC to scan per operand
	older bool  // pieces are newest first
}

func (m *concatMerger) add(v []byte) {
	m.arena = append(m.arena, v...)
	m.ends = append(m.ends, len(m.arena))
}

// MergeNewer implements pebble.ValueMerger.
func (m *concatMerger) MergeNewer(value []byte) error {
	if m.older {
		m.collapse()
	}
	m.add(value)
	return nil
}

// MergeOlder implements pebble.ValueMerger.
func (m *concatMerger) MergeOlder(value []byte) error {
	if !m.older {
		m.collapse() // one piece (or none): either order
		m.older = true
	}
	if len(value) >= len(m.arena) {
		out := make([]byte, len(value), len(value)+len(m.arena))
		copy(out, value)
		m.arena = m.appendConcat(out)
		m.ends = append(m.ends[:0], len(m.arena))
		return nil
	}
	m.add(value)
	return nil
}

// collapse makes the pieces one piece holding their concatenation in
// order, and the order "newer".
func (m *concatMerger) collapse() {
	if m.older && len(m.ends) > 1 {
		m.arena = m.appendConcat(make([]byte, 0, len(m.arena)))
	}
	if len(m.ends) > 1 {
		m.ends = append(m.ends[:0], len(m.arena))
	}
	m.older = false
}

// appendConcat appends the pieces to dst, oldest first.
func (m *concatMerger) appendConcat(dst []byte) []byte {
	if !m.older {
		return append(dst, m.arena...)
	}
	for i := len(m.ends) - 1; i >= 0; i-- {
		start := 0
		if i > 0 {
			start = m.ends[i-1]
		}
		dst = append(dst, m.arena[start:m.ends[i]]...)
	}
	return dst
}

// Finish implements pebble.ValueMerger. The merger neither keeps nor
// mutates the result.
func (m *concatMerger) Finish(bool) ([]byte, io.Closer, error) {
	out := m.arena
	if m.older && len(m.ends) > 1 {
		out = m.appendConcat(make([]byte, 0, len(m.arena)))
	}
	*m = concatMerger{}
	return out, nil, nil
}
