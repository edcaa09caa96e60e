// Package statebackend owns the keyed state backends of a task: it builds
// the heap ("hashmap") or Pebble backend for one keyed operator subtask from
// a Config, and gives the task runtime one interface, Keyed, to set the
// current key, snapshot and restore.
//
// # The contract with the task runtime
//
//   - New(cfg) once per keyed operator subtask, for its key-group range; then
//     Restore (if the job restarts from a snapshot) before the operator's Open.
//   - Before each record or timer: SetCurrentKey(encoded key, key group), and
//     SetCurrentNamespace (windows; empty means none). The key bytes are copied.
//   - User code gets the Keyed as a state.KeyedStore and creates its handles
//     once, in Open.
//   - A state call whose backend fails panics with *state.BackendError; the
//     runtime recovers it and fails the task.
//   - Snapshot(id, kind) runs on the task goroutine and is short: the heap
//     backend freezes its maps (copy-on-write; O(key groups x states)), Pebble
//     writes back its write cache (at most PebbleOptions.WriteCacheBytes) and
//     takes a Pebble snapshot (canonical) or flushes the memtable and
//     hard-links a checkpoint (native). Pending.Materialize then runs on
//     any goroutine while processing continues, and writes the canonical
//     format (see internal/snapshot) or lists the checkpoint's files, marking
//     the ones shared with the previous checkpoint (incremental upload).
//     Every Pending must be materialized or released.
//   - Restore takes snapshots of any key-group ranges (canonical, from either
//     backend; or native Pebble checkpoints into the Pebble backend) and keeps
//     the key groups of its own range: that is rescaling. A restored state
//     registered later with another kind fails its registration; with
//     another codec identity or schema it goes through snapshot.Resolve and
//     the state's evolve function: migrated once (the heap backend as it
//     decodes the restored entries; Pebble by rewriting the state's entries
//     into a new table id at registration) or refused.
//   - Close releases the backend (Pebble: closes and deletes its working dir).
//
// Everything but Pending.Materialize must be called from the task goroutine.
package statebackend
