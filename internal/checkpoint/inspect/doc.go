// Package inspect reads a complete checkpoint or savepoint and says what it
// holds, per operator: keyed state by state name (kind, key-group ranges,
// keys, entries and bytes), operator list/union/broadcast state sizes, a
// source's reader splits and enumerator state, a two-phase-commit sink's
// pending committables. It backs `weir savepoint inspect`.
//
// It reads the stored files themselves, not a running job: the metadata
// (internal/checkpoint/storage) and the canonical snapshots
// (internal/snapshot), one key group at a time through range reads, so a
// large savepoint is streamed and memory stays bounded by one key group's
// distinct keys (counted through 64-bit hashes, so two keys could collide
// and be counted once: an under-count of about n²/2⁶⁴). Keyed state in
// Pebble's native format is downloaded (file by file, checked, to a
// temporary directory: Pebble opens files, not object ranges) and read
// with Pebble in key order; its counts are Pebble records (a list state is
// one record per key and namespace), and its timers are a canonical
// snapshot read as above. Operator (non-keyed) state objects are read
// whole, as a restore reads them: they are bounded by what one subtask's
// operator state holds, not by the keyed state.
//
// Elements of operator state are encoded by codecs only the job knows, so
// their contents are not decoded, except the framing Weir's own operators
// add: a sink's pending committable starts with the checkpoint id it was
// prepared for.
package inspect
