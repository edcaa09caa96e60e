package protocol

// The handles below name checkpointed state in a store: a TaskManager's
// acknowledgement carries them to the JobManager, which writes them into
// the checkpoint's metadata (internal/checkpoint/storage names them by
// aliases and validates them), and a deployment carries them back to the
// TaskManager that restores. Their JSON names are the metadata format.

// SubtaskState is the state of one operator subtask.
type SubtaskState struct {
	Subtask        int            `json:"subtask"`                  // 0 <= Subtask < Parallelism
	Keyed          []KeyedHandle  `json:"keyed,omitempty"`          // keyed state; usually one handle
	Operator       *ObjectHandle  `json:"operator,omitempty"`       // the encoded operator (non-keyed) state, if any
	InputChannels  []ObjectHandle `json:"inputChannels,omitempty"`  // channel state of unaligned checkpoints
	OutputChannels []ObjectHandle `json:"outputChannels,omitempty"` // channel state of unaligned checkpoints
	Inline         []byte         `json:"inline,omitempty"`         // the operator state when under storage.InlineLimit; excludes Operator
}

// Kinds of keyed state handles.
const (
	KindCanonical = "canonical" // one snapshot file in the canonical format (internal/snapshot)
	KindNative    = "native"    // the files of a Pebble checkpoint, plus timers
)

// KeyedHandle is the keyed state of a key-group range.
type KeyedHandle struct {
	Kind          string        `json:"kind"`             // KindCanonical or KindNative
	KeyGroupStart int           `json:"keyGroupStart"`    // inclusive
	KeyGroupEnd   int           `json:"keyGroupEnd"`      // inclusive; < MaxParallelism
	Object        ObjectHandle  `json:"object,omitzero"`  // canonical: the snapshot file
	Files         []NativeFile  `json:"files,omitempty"`  // native: the files of the Pebble checkpoint
	Timers        *ObjectHandle `json:"timers,omitempty"` // native only: the timers, as a canonical snapshot
}

// NativeFile is one file of a native (Pebble) checkpoint.
type NativeFile struct {
	Name   string       `json:"name"`             // file name inside the Pebble checkpoint directory
	Object ObjectHandle `json:"object"`           // where it is stored (a shared/ key for SSTs)
	Shared bool         `json:"shared,omitempty"` // lives under shared/ and may be referenced by several checkpoints
}

// ObjectHandle names a stored object and what its bytes must be.
type ObjectHandle struct {
	Key  string `json:"key"` // relative to the store root
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc"` // CRC32C (Castagnoli) of the object's bytes, checked by storage.ReadVerified
}
