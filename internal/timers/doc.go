// Package timers owns the timer service of a keyed operator subtask:
// event-time and processing-time timers keyed by (timestamp, key, namespace),
// deduplicated, fired in timestamp order, and stored per key group so that
// they are snapshotted in the canonical snapshot format (internal/snapshot)
// and redistributed with the keyed state on rescale.
//
// The service is pure: no goroutines and no clock reads. The task runtime
// calls AdvanceWatermark when the watermark moves, asks NextProcessingTime to
// arm its single processing-time wake-up, and calls FireProcessingTime when
// it fires. Like the state backends, it is owned by the task goroutine; only
// snapshot sources are read from another goroutine.
//
// Each key group of each time domain keeps an open-addressing table of
// 8-byte slots (a 32-bit hash tag and an item index), keyed by a 64-bit hash
// of (timestamp, key, namespace), over a pool of fixed-size items and an
// append-only arena of their keys and namespaces: registering a new timer
// allocates nothing in the steady state, and a duplicate is found by
// comparing tags before bytes. The heap of each domain holds (timestamp, key
// group, first id bytes, item index) entries. Tables and pools are
// copy-on-write after a snapshot, as in internal/statebackend/typedstore; arenas
// are shared, since their bytes are never rewritten (a full arena is
// replaced by a compacted copy), which also keeps fired timers' keys valid.
//
// On the hashmap backend the service counts its timers against the
// backend's budget (UseMemory; weir.Config.HeapStateMemory), each for its
// item, heap entry, id bytes and table slots with room for their growth
// (timerBytes), through a budget.Charger per time domain that takes and
// gives back 64 KiB at a time. A registration that would pass the bound
// panics with a *budget.Error, which the task turns into a permanent failure;
// a fired timer, or a deleted one once its heap entry is dropped, gives
// its bytes back, and Release gives back the rest. Not counted: a key
// group's first table and arena, and what a snapshot still holds of the
// tables and pools the task copied since. On the pebble backend the
// timers are not bounded by that setting (the process-wide guard,
// weir.Config.ProcessMemory, watches them).
package timers
