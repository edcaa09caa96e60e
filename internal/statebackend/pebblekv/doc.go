// Package pebblekv owns the Pebble side of the "pebble" state backend: one
// Pebble DB per keyed operator subtask, the key layout, the value layout, the
// byte-level table of each state that package state's handles call, and the
// DB's snapshots, checkpoints and restores.
//
// Key layout (each key group contiguous, prefixes cannot collide):
//
//	key group u16 BE | state id u16 BE | uvarint(len(key)) key | uvarint(len(ns)) ns | user key
//
// The user key (map states only) is last and unprefixed: all entries of one
// map share the prefix before it. State ids are local to a DB; the name -> id
// mapping lives in the DB under the reserved key group 0xFFFF (above the
// largest max parallelism, 32768), so a checkpoint is self-describing.
//
// Value layout: [TTL timestamp i64 BE, if the state has TTL] codec bytes.
// Lists: a concatenation of elements [ts i64 BE, if TTL] uvarint(len) bytes;
// an Add is a Pebble merge operand, concatenated on read and compaction by
// listMerger (merge.go: linear, unlike pebble.DefaultMerger, under the same
// persisted name), so appending never reads the list. Maps: one Pebble key per user key.
//
// Value, reducing and aggregating states go through a bounded write-back
// cache (cache.go), written back before every snapshot. The DB runs without
// a WAL: it never outlives its process (a restarted task restores into a
// fresh directory), and a native checkpoint flushes the memtable first, so
// new data is in new SST files only (incremental checkpoints).
//
// The metadata of a state (kind, TTL, codec identity, schemas) is stored
// with its id. A state restored under another schema is rewritten once when
// an operator registers it (DB.Table, migrateTable): every entry into a new
// state id, the old id's range deleted; reads never check schemas.
//
// Memory is bounded by the block cache, the memtables and the write-back
// cache (Options); the Go heap does not grow with the number of keys.
package pebblekv
