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
// # Changing state in place
//
// User code may change in place what it holds in state: a map or slice
// read from a ValueState, ListState element or MapState value, a
// ReducingState's or AggregatingState's accumulator in Reduce/Add, a
// window function's accumulator (weir.AggregateFunction, WindowReduce),
// operator list state. A snapshot never reads memory the task is writing:
// on the heap backend, whose handles hand out the stored value itself, the
// first access after a snapshot began to an entry whose type can be
// changed in place (it holds a map, slice, pointer or interface) copies it
// through its codec (copy-on-write per entry, as the table's other
// copy-on-write); operator state is encoded at the barrier, on the task's
// goroutine. Types without references (numbers, strings, structs of them)
// are copied by assignment, so they cost nothing more, and nothing is
// copied between checkpoints. Write changes back with Update/Put/Add all
// the same: the Pebble backend hands out decoded copies, so a change that
// is not written back is lost there (and a value changed after it was
// written, or held across calls, is not guaranteed to be in a snapshot).
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
// # Operator and broadcast state
//
// An OperatorStore (operator list, union list and broadcast state) is owned
// by its task goroutine and encoded synchronously at the checkpoint barrier,
// so user code may change values it holds in place. Broadcast state has two
// views: BroadcastState for the broadcast side of a connected stream, and
// ReadOnlyBroadcastState (from a ReadOnlyBroadcastStore) for the element
// side; the broadcast operators make every write outside the broadcast side
// panic with a permanent error (OperatorStore.SetBroadcastReadOnly).
//
// # TTL
//
// A descriptor's TTLConfig makes entries expire TTL after their last write (or
// read, with OnReadAndWrite), measured in processing time from the backend's
// clock. Expired values are never returned; they are removed when accessed and
// left out of snapshots. List elements and map entries expire individually.
package state
