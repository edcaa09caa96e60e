// Package typedstore owns the typed in-memory keyed state tables that the
// state SPI offers (internal/statebackend/spi): per state, per key group, a
// hash table from the current key (and namespace) to a typed entry. It is
// a data structure, not a backend: the "hashmap" backend
// (internal/statebackend) keeps all its states in one Store and writes its
// snapshots to checkpoint storage; another backend may keep some states in
// one too.
//
// The tables are generic over the entry payload and are created by the
// generic constructors of package state, which know the value types and
// codecs (Go instantiates generic code where the type is known, so this
// package is on the SPI side, which public packages may import); the
// Store sees them through a small type-erased interface for snapshot and
// restore. The Store is the state SPI's Backend of every state it holds.
// Operators reach the tables and the store directly through two
// capabilities the SPI declares (spi.DirectTable, of a state handle, and
// spi.DirectStore, of the keyed backend), which they check once, when
// they open.
//
// A key group's table is our own hash table (slots.go), not a Go map:
// Swiss-table control bytes (7 bits of hash per slot, matched 8 at a time
// with word operations), entries in the table's array, up to 16 bytes of
// map key inline as words (longer keys in a per-table list), a seeded
// multiply-mix hash (two folds) computed once per key for all states (from words, with
// no map key built, for a short key with or without a short namespace, as
// a window slice's), and a preferred slot per key, read before the
// control word in a table larger than the caches (8 MiB of slots; a
// smaller one reads the control word first). A Go map keyed by string
// reads a control word, the key's separate bytes and an entry behind a
// pointer, and hashes with a call per lookup; that was two thirds of a
// value-state update. What each choice bought is in docs/benchmarks.md.
//
// Snapshots are copy-on-write, so the task goroutine only pauses for
// O(number of key groups x states) at a snapshot: Snapshot bumps the store's
// snapshot version and hands the current tables to the snapshot. A key
// group's table whose version is older than the store's is shared with a
// snapshot; the first write to it copies what holds no entries (control
// words, the list of slot pages, long keys), the first write to a page of
// slots copies that page (512 slots), and an entry older than the current
// version gets a copy of its value (Ops.Clone) before it is modified in
// place. The snapshot goroutine therefore only reads arrays and values that
// the task goroutine never writes again. The first write after a snapshot
// copies a page and the table's control words (measured at 1 GB of short
// keys: at most 0.16 ms, against 114 ms when whole tables were copied),
// plus the table's list of long keys (16 bytes per key over 16 bytes of
// map key, which includes most keys with a namespace). A table that grows
// is rebuilt whole, snapshot or not.
// Between snapshots, updating an existing key allocates nothing.
//
// A slot keeps the low 32 bits of its entry's version beside 32 bits of
// its key's hash (a slot of an 8-byte value is 32 bytes, two to a cache
// line), so a version comes round after 2^32 snapshots: every 2^31
// snapshots, Snapshot first gives every entry the current version, which
// the snapshot then makes old (Table.ageVersions, copying the pages a
// snapshot still shares), so no entry ever looks newer than it is.
//
// Two lookups leave the current key alone: Probe/Lines/Probed (the current
// key's place taken first, so that an operator can prefetch the slots of a
// run of elements before it updates them) and OwnedWord (an 8-byte key's entry
// from its key group and word, for an operator whose function reads no
// state). Both return only entries no snapshot shares. A Probe names slots
// by index, so a table that grew or copied a page since it was taken is
// read as it is now; OwnedWord's entry, like Lookup's, is valid until the
// table next changes. MemoWord answers from a memo of what OwnedWord found
// (a direct-mapped array from key word to entry, in a table whose user
// asks OwnedWord and that has fewer than 16384 keys, and that does not
// count what its values point to): a multiplication and a load
// instead of the key group's hash, the key's image and the probe. A key
// group that grows or is rebuilt and a snapshot empty the memo, a delete
// drops the key's place, and an entry a snapshot shares is not returned
// (its version is old), so the memo never names a moved, freed or shared
// slot.
//
// A store may draw on a budget.Budget, the bound its TaskManager's stores share
// (weir.Config.HeapStateMemory): a key group's table takes the bytes it
// adds before it grows, and a growth past the bound panics with a
// *budget.Error naming the setting. In such a store a table whose value
// type holds pointers also counts what its values point to (size.go): a
// measure derived once by reflection (a string's length, a slice's array
// and its elements' pointees, a struct's fields, a map's estimated table
// and its keys' and elements' pointees; by the encoding's length for
// interfaces, funcs and recursive types). The entry handed out for a
// write is remembered and measured when the write settles (the table's
// next write, delete, growth or snapshot), so a write past the bound
// fails at most one write late; overwrites and deletes give bytes back.
// A type without pointers gets no measure and pays nothing per record.
// Long keys count their bytes. A snapshot taken with Store.Freeze holds,
// until released, what the task copies away from it (pages, control
// words, cloned or deleted values), counted as held by it. The timers
// of a subtask on this backend (internal/timers) take from the same
// Memory through a Charger, which takes in chunks so that its user pays
// an add and a compare per timer.
//
// The map key is uvarint(len(key)) | key | namespace: unambiguous, so the
// snapshot can split it back into key and namespace.
package typedstore
