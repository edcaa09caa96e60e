// Package snapshot owns the canonical, backend-independent format of keyed
// state snapshots, and the vocabulary shared by the state backends: state
// kinds, state metadata and snapshot entries.
//
// A snapshot written by the heap backend restores into the Pebble backend and
// the other way round, and into any key-group range, because every backend
// writes and reads the same logical entries: (state, key, namespace, user key,
// value, TTL timestamp), grouped by key group.
//
// File layout (all integers big-endian unless marked uvarint/varint):
//
//	header   36 bytes: magic "WEIRKGS\x00", version u16, reserved u16,
//	         maxParallelism u32, range start u32, range end u32,
//	         checkpoint id i64, CRC32C u32 of the previous 32 bytes
//	chunks   type byte | payload length u32 | payload | CRC32C u32 of type+length+payload
//	         'M' metadata (exactly one, first): uvarint count, per state:
//	             name (uvarint length + bytes), kind byte, ttl millis varint, ttl update byte,
//	             codec identity (uvarint length + bytes; version 2 on, absent in version 1),
//	             value schema, user-key schema (each uvarint length + bytes, "" for none:
//	             codec.Schema.AppendBinary; version 3 on)
//	         'G' key-group entries (zero or more per key group, contiguous per key group):
//	             uvarint key group, then entries until the end of the payload:
//	             uvarint state index, flags byte (1: has user key, 2: has TTL timestamp),
//	             key, namespace, [user key], value (each uvarint length + bytes), [ts varint]
//	         'I' index (exactly one, last): uvarint count, per 'G' chunk:
//	             uvarint key group, uvarint offset, uvarint length of the whole chunk
//	footer   20 bytes: index offset u64, magic "WEIRKGSE", CRC32C u32 of the previous 16 bytes
//
// The index lets a restoring subtask read only the chunks of its own key groups
// with an io.ReaderAt. A key group's entries are split into chunks of about
// ChunkTarget bytes so neither writer nor reader holds a whole key group in memory.
//
// Value encodings per kind: Value, Reducing and Aggregating entries hold the
// codec bytes of the value (or accumulator); a List is one entry per element,
// in list order; a Map is one entry per user key; timers are one entry per
// timer with an 8-byte big-endian timestamp as value.
package snapshot
