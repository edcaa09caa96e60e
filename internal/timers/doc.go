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
// copy-on-write after a snapshot, as in internal/statebackend/heap; arenas
// are shared, since their bytes are never rewritten (a full arena is
// replaced by a compacted copy), which also keeps fired timers' keys valid.
package timers
