// Package storage owns where checkpoints and savepoints live and what their
// metadata says: one object-store API addressed by URL (file://, mem://, and
// s3:// when package s3store is linked in), the Flink layout of checkpoint
// directories, the versioned and checksummed metadata format, discovery of
// the latest complete checkpoint, retention of files shared by incremental
// checkpoints, the runs of a lineage (lineage.go: OfLineage decides which job
// IDs are earlier runs of a job; ScanLineage finds them; the deletions
// cleanup needs), and fault injection for tests.
//
// Layout under a store's root (keys use "/"):
//
//	<job-id>/chk-<n>/_metadata   written last; its presence with a valid checksum makes checkpoint n complete
//	<job-id>/chk-<n>/<anything>  task-owned objects of checkpoint n, deleted with it
//	<job-id>/shared/<name>       objects shared by several checkpoints (incremental Pebble SSTs)
//	<job-id>/_job                the run's identity (JobInfo), written before its first checkpoint
//
// Every key a Metadata names is relative to the root of the store it was
// written to, so a checkpoint root can be moved or copied as a whole.
//
// A savepoint is a folder of its own (savepoint.go), the root of its keys:
//
//	<target>/savepoint-<job id[:6]>-<random>/_metadata   written last (Savepoint: true)
//	<target>/savepoint-.../<name>, shared/<name>          its objects, copied from a checkpoint
//
// so the folder alone can be moved, renamed or copied to another store;
// Resolve takes any folder not named chk-<n> as one.
//
// Atomicity: Put and NewWriter publish an object whole or not at all (file:
// write to "<name>.<hex>.tmp" beside it, rename, fsync file and directory;
// NewWriter's file writes bypass the page cache with O_DIRECT where the
// file system allows it, see filewriter.go and filereader.go;
// mem: on Close; s3: one PUT or a completed multipart upload). PutFile and
// GetFile move immutable files (Pebble's SSTs) between a task's directory
// and a file store on the same file system as hard links, not copies
// (link.go). A writer whose
// context is canceled, or one of whose writes failed, leaves nothing.
// Temporary files are not listed; Discard removes those a crash left in a
// checkpoint directory.
//
// Metadata encoding (big-endian):
//
//	magic "WEIRCKPT" | version u16 (1) | length u32 | JSON payload | CRC32C u32 of everything before
//
// The JSON field names are fixed by struct tags, not Go names. A reader
// refuses unknown fields, so adding a field needs a new version;
// testdata/metadata-v1.bin is the golden file every build must still read.
//
// Operator (non-keyed) state under InlineLimit (4 KiB) is inlined in the
// metadata (SubtaskState.Inline) rather than written as an object.
//
// Not here: deciding when to checkpoint and which checkpoints to retain (the
// coordinator, and the JobManager's storage hygiene), and the formats of the objects themselves (internal/snapshot
// for keyed state).
package storage
