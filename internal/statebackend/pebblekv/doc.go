// Package pebblekv owns the Pebble side of the "pebble" state backend: one
// Pebble DB per keyed operator subtask, the key layout, the value layout, and
// the byte-level table of each state that package state's handles call.
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
// an Add is a Pebble merge (the default concatenating merger), so appending
// never reads the list.
//
// Memory is bounded by the block cache and the memtables (Options); the Go
// heap does not grow with the number of keys.
package pebblekv
