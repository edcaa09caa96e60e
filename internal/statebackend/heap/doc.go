// Package heap owns the in-memory keyed state tables of the "hashmap" state
// backend: per state, per key group, a Go map from the current key (and
// namespace) to a typed entry.
//
// The tables are generic over the entry payload and are created by the
// generic constructors of package state, which know the value types and
// codecs; the Store sees them through a small type-erased interface for
// snapshot and restore.
//
// Snapshots are copy-on-write, so the task goroutine only pauses for
// O(number of key groups x states) at a snapshot: Snapshot bumps the store's
// snapshot version and hands the current maps to the snapshot. A key group's
// map whose version is older than the store's is shared with a snapshot; the
// first write to it clones the map (maps.Clone, pointers only), and an entry
// older than the current version is replaced by a copy before it is modified
// in place. The snapshot goroutine therefore only reads maps and entries that
// the task goroutine never writes again. Between snapshots, updating an
// existing key allocates nothing.
//
// The map key is uvarint(len(key)) | key | namespace: unambiguous, so the
// snapshot can split it back into key and namespace.
package heap
