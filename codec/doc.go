// Package codec owns the byte formats of record values: how a T becomes bytes
// in a network buffer or a state backend and back.
//
// It provides the Codec contract, fast hand-written codecs for the basic types
// (Int64, String, Time, ...), generic compositions (Slice, Map, Pointer,
// Tuple2, Tuple3) and For, which derives a codec from a Go type once and
// caches it.
//
// Wire format, chosen for speed over size (values go into 32 KiB buffers):
//   - integers and floats: fixed width, little-endian; int and uint are 8
//     bytes on every platform; bool is one byte, 0 or 1;
//   - string: uvarint length, then the bytes;
//   - []byte, slices and maps: uvarint 0 for nil, otherwise uvarint(len+1),
//     then the elements (map entries as key, value), so nil and empty survive
//     a round trip;
//   - pointer: one byte, 0 for nil or 1 followed by the value;
//   - time.Time: int64 Unix seconds and uint32 nanoseconds (location and
//     monotonic reading are dropped; decoded times are in UTC);
//   - structs, arrays and tuples: the fields in order, with no framing.
//
// Map encodings follow Go's map iteration order, so they are not canonical:
// equal maps may encode to different bytes. Do not compare or hash encoded
// maps.
//
// Decoders validate before they allocate: lengths and counts are checked
// against the input left and against MaxLen, so corrupt input returns
// ErrTruncated or ErrCorrupt rather than panicking or allocating gigabytes.
//
// The format is not self-describing and carries no version: the versioned
// formats that persist values (snapshots, savepoints) record which codec and
// version wrote them, and the codec's Schema (schema.go): for derived codecs
// the field names and types, recursively. Compare decides whether bytes
// written under one schema read under another as is, after migration
// (fields added, removed, moved: Transcoder rewrites the bytes) or not at
// all (a field's type changed). Hand-written codecs may declare a schema
// and migrate their own bytes (SchemaDeclarer, Migrator).
package codec
