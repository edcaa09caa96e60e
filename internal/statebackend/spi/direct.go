package spi

import "github.com/weirhq/weir/internal/statebackend/typedstore"

// The capabilities through which operators reach typed tables directly.
// A backend that keeps a state in a typedstore.Table offers them, whatever
// else it is; each is checked once, when an operator opens, never per
// record, and what it gives is then called without an interface call per
// access.

// DirectTable is implemented by a state handle whose state is one
// typedstore.Table of E and whose accessors add nothing to the table's (a
// ValueState without TTL). Through the table an operator reads and
// updates the current key's entry (Lookup, Upsert), finds an 8-byte key's
// entry without setting the current key (OwnedWord, MemoWord), and takes
// the first half of a lookup for a run of elements, whose slots it
// prefetches before it uses them (Probe, ProbeLines, Probed).
type DirectTable[E any] interface {
	TypedTable() *typedstore.Table[E]
}

// DirectStore is implemented by a keyed state backend whose states are
// the typed tables of one typedstore.Store. Through the store an operator
// sets an 8-byte key as a word (SetCurrentKeyWord), lists the cache lines
// of the current key's entries in every table (CurrentLines, SlotBytes),
// to prefetch a run of elements, counts the entries (Entries), and creates
// tables of its own (NewTable).
type DirectStore interface {
	TypedStore() *typedstore.Store
}
