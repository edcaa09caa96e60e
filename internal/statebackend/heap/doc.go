// Package heap owns the in-memory keyed state tables of the "hashmap" state
// backend: per state, per key group, a hash table from the current key (and
// namespace) to a typed entry.
//
// The tables are generic over the entry payload and are created by the
// generic constructors of package state, which know the value types and
// codecs; the Store sees them through a small type-erased interface for
// snapshot and restore.
//
// A key group's table is our own open addressing with linear probing
// (slots.go), not a Go map: entries live in the table's arrays, keys of up
// to 24 bytes of map key live in the entry as words, and the hash is a
// seeded multiply-mix of those words computed once per key for all states.
// A Go map keyed by string reads a control word, the key's separate bytes
// and an entry behind a pointer, and hashes with a call per lookup; that was
// two thirds of a value-state update.
//
// Snapshots are copy-on-write, so the task goroutine only pauses for
// O(number of key groups x states) at a snapshot: Snapshot bumps the store's
// snapshot version and hands the current tables to the snapshot. A key
// group's table whose version is older than the store's is shared with a
// snapshot; the first write to it copies the table's arrays, and an entry
// older than the current version gets a copy of its value (Ops.Clone)
// before it is modified in place. The snapshot goroutine therefore only
// reads arrays and values that the task goroutine never writes again.
// Between snapshots, updating an existing key allocates nothing.
//
// The map key is uvarint(len(key)) | key | namespace: unambiguous, so the
// snapshot can split it back into key and namespace.
package heap
