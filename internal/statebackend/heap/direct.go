package heap

// The capabilities through which operators reach the tables directly.
// Each is checked once, when an operator opens, never per record; what
// it gives is then called without an interface call per access.

// DirectTable is implemented by a state handle whose state is one Table
// of E and whose accessors add nothing to the table's (a ValueState
// without TTL). Through the table an operator reads and updates the
// current key's entry (Lookup, Upsert), finds an 8-byte key's entry
// without setting the current key (OwnedWord, MemoWord), and takes the
// first half of a lookup for a run of elements, whose slots it prefetches
// before it uses them (Probe, ProbeLines, Probed).
type DirectTable[E any] interface {
	HeapTable() *Table[E]
}

// DirectStore is implemented by a keyed state backend whose states are
// Tables of one Store. Through the store an operator sets an 8-byte key
// as a word (SetCurrentKeyWord), lists the cache lines of the current
// key's entries in every table (CurrentLines, SlotBytes), to prefetch a
// run of elements, counts the entries (Entries), and creates tables of
// its own (NewTable).
type DirectStore interface {
	HeapStore() *Store
}
