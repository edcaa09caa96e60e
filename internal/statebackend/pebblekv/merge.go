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
// Pebble reads forward, newest operand first (Merge, then MergeOlder for
// each older one), which is the quadratic case. This merger copies each
// operand once into an arena and concatenates the arena's pieces once, in
// Finish: O(total bytes).
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
// the operands it passes (they may alias reused buffers), so each is copied,
// once, to the end of arena; ends[i] is the end of piece i in arena. Piece 0
// is the first operand (from Merge); the pieces after it are all newer
// (MergeNewer) or all older (MergeOlder, newest of them first): Pebble
// never mixes the two in one merge (base.ValueMerger's contract).
type concatMerger struct {
	arena []byte
	ends  []int
	older bool // the pieces after the first came through MergeOlder
}

func (m *concatMerger) add(v []byte) {
	m.arena = append(m.arena, v...)
	m.ends = append(m.ends, len(m.arena))
}

// MergeNewer implements pebble.ValueMerger.
func (m *concatMerger) MergeNewer(value []byte) error {
	if m.older {
		// Not done by Pebble; kept correct rather than assumed away.
		m.collapse()
	}
	m.add(value)
	return nil
}

// MergeOlder implements pebble.ValueMerger.
func (m *concatMerger) MergeOlder(value []byte) error {
	if !m.older && len(m.ends) > 1 {
		// Newer pieces already arrived (not done by Pebble): make them
		// one piece, in order, before switching direction.
		m.collapse()
	}
	m.older = true
	m.add(value)
	return nil
}

// collapse makes the pieces one piece holding their concatenation in order.
func (m *concatMerger) collapse() {
	m.arena = m.concat()
	m.ends = append(m.ends[:0], len(m.arena))
	m.older = false
}

// concat returns the pieces' concatenation, oldest first.
func (m *concatMerger) concat() []byte {
	if !m.older || len(m.ends) == 1 {
		return m.arena // already in order
	}
	out := make([]byte, len(m.arena))
	// Pieces are newest first in arena: piece len-1 is the oldest.
	n := 0
	for i := len(m.ends) - 1; i >= 0; i-- {
		start := 0
		if i > 0 {
			start = m.ends[i-1]
		}
		n += copy(out[n:], m.arena[start:m.ends[i]])
	}
	return out
}

// Finish implements pebble.ValueMerger. The result is not retained or
// mutated by the merger.
func (m *concatMerger) Finish(bool) ([]byte, io.Closer, error) {
	out := m.concat()
	m.arena, m.ends = nil, nil
	return out, nil, nil
}
