// Package state owns the user-facing state API: descriptors, the typed state
// handles (Value, List, Map, Reducing, Aggregating), TTL, operator (non-keyed)
// list state with its redistribution on rescale, and broadcast state.
//
// # Keyed state
//
// The task runtime gives each keyed operator subtask one KeyedStore (a state
// backend from internal/statebackend). Before each record (or timer) it sets
// the current key, its key group and, for windows, the current namespace;
// handles created once in Open read the current key at each call. The
// Get*State functions return the same handle for the same name; a name reused
// with another kind or type panics with a message naming the state. A nil
// codec in a descriptor is the one codec.For derives from the type;
// Validate reports a descriptor's mistakes without registering it.
//
// Handles returned by the heap backend hand out the stored value itself:
// treat values read from state as read-only, and write changes back with
// Update/Put/Add. Reduce may mutate its first argument, Add its accumulator:
// copy-on-write snapshots clone accumulators through their codec.
//
// # Map state on the heap backend
//
// A MapState keeps each key's map in the heap table's entry: a Go map, or,
// for user keys of a 64-bit integer kind, an open-addressing array of
// key-value slots (mapint.go: one cache miss per lookup past the entry,
// where a cold Go map costs several). Loops (All, Keys) over the latter see
// the entries as they were when the loop started, as the Pebble backend's
// do; snapshots are the same canonical entries either way.
//
// # Errors
//
// State calls do not return errors, so user functions stay plain. A backend
// I/O failure (for example a Pebble read error) panics with a *BackendError;
// the task runtime recovers it and fails the task with it as the cause, which
// restarts the job from its last checkpoint. A panic of any other type from
// state is a programmer error (wrong descriptor, no current key).
//
// # Schema evolution
//
// Each state records its codecs' schemas (codec.SchemaOf) in snapshots.
// A restore whose recorded schema differs from the registered state's
// migrates the restored values once, before the first access (schema.go):
// struct fields added read as zero values, removed ones are dropped, moved
// ones are matched by name; a field whose type changed fails the restore
// permanently, naming the state and the field. A codec implementing
// codec.Migrator migrates its own values. Snapshots without schemas, and
// codecs without one, are checked by codec identity as before.
//
// # TTL
//
// A descriptor's TTLConfig makes entries expire TTL after their last write (or
// read, with OnReadAndWrite), measured in processing time from the backend's
// clock. Expired values are never returned; they are removed when accessed and
// left out of snapshots. List elements and map entries expire individually.
package state
