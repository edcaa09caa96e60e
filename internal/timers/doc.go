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
// snapshot sources are read from another goroutine, and per-key-group maps
// are copy-on-write after a snapshot, as in internal/statebackend/heap.
package timers
