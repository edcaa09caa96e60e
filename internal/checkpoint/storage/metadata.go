package storage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/protocol"
)

// Metadata describes one complete checkpoint or savepoint: everything needed
// to restore the job from it. Every key it names is relative to the root of
// the store it was written to.
type Metadata struct {
	JobID          string          `json:"jobId"`
	JobName        string          `json:"jobName"`
	CheckpointID   int64           `json:"checkpointId"`   // > 0
	TriggerMillis  int64           `json:"triggerMillis"`  // epoch ms
	CompleteMillis int64           `json:"completeMillis"` // epoch ms
	Savepoint      bool            `json:"savepoint,omitempty"`
	Fingerprint    string          `json:"fingerprint"` // of the job graph
	Operators      []OperatorState `json:"operators"`   // sorted by OperatorID, unique
	// KeyHash is the key hash version the keyed state's key groups were
	// computed with; 0 in metadata written before it was recorded, whose
	// builds used keygroup.HashFNV.
	KeyHash keygroup.HashVersion `json:"keyHash,omitempty"`
	// Lineage names the line of runs this snapshot belongs to: a job
	// started fresh begins a lineage (its id is the run's job ID), and a run
	// resumed from a snapshot continues the snapshot's. Empty in metadata
	// written before lineages were recorded (see LineageOf).
	Lineage string `json:"lineage,omitempty"`
}

// LineageOf is the lineage m belongs to: m.Lineage, or, for metadata written
// before lineages were recorded, the ID of the job that wrote it (so every
// run resumed from one old snapshot continues one lineage).
func (m *Metadata) LineageOf() string {
	if m.Lineage != "" {
		return m.Lineage
	}
	return m.JobID
}

// KeyHashVersion is the key hash version m's keyed state was written with:
// m.KeyHash, or keygroup.HashFNV when m names none (it was written before
// versions were recorded) and holds keyed state; 0 when it names none and
// holds none (nothing depends on the hash then).
func (m *Metadata) KeyHashVersion() keygroup.HashVersion {
	if m.KeyHash != 0 {
		return m.KeyHash
	}
	for i := range m.Operators {
		if m.Operators[i].HasKeyed() {
			return keygroup.HashFNV
		}
	}
	return 0
}

// OperatorState is the state of one operator (Flink's OperatorState).
type OperatorState struct {
	OperatorID     string         `json:"operatorId"`
	UID            string         `json:"uid,omitempty"`
	Name           string         `json:"name"`
	Parallelism    int            `json:"parallelism"`           // >= 1, at the time of the checkpoint
	MaxParallelism int            `json:"maxParallelism"`        // >= Parallelism: the number of key groups
	Coordinator    []byte         `json:"coordinator,omitempty"` // the coordinator's state (a source's split enumerator), nil if none
	Subtasks       []SubtaskState `json:"subtasks,omitempty"`    // sorted by Subtask, unique; subtasks without state may be left out
}

// HasKeyed reports whether any subtask of op has keyed state.
func (op *OperatorState) HasKeyed() bool {
	for _, st := range op.Subtasks {
		if len(st.Keyed) > 0 {
			return true
		}
	}
	return false
}

// InlineLimit is the largest operator (non-keyed) state that is inlined into
// the metadata (SubtaskState.Inline) instead of written as an object: below
// it an object costs more (a request per subtask on restore) than its bytes
// in the metadata. Writers should inline states under InlineLimit bytes and
// must not inline larger ones (Validate refuses them).
const InlineLimit = 4 << 10

// MaxMetadataSize bounds an encoded Metadata (the payload of many thousand
// subtasks with inlined state still fits).
const MaxMetadataSize = 256 << 20

// The handle types are the protocol's (a TaskManager's acknowledgement
// carries them to the JobManager, which writes them into the metadata);
// storage names them so that its users need not import the protocol.
type (
	SubtaskState = protocol.SubtaskState
	KeyedHandle  = protocol.KeyedHandle
	NativeFile   = protocol.NativeFile
	ObjectHandle = protocol.ObjectHandle
)

// Kinds of keyed state handles.
const (
	KindCanonical = protocol.KindCanonical
	KindNative    = protocol.KindNative
)

// crcTable is CRC32C (Castagnoli), used for metadata and object checksums.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC32C of data, as stored in ObjectHandle.CRC.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, crcTable) }

// HandleOf returns the handle of data stored at key.
func HandleOf(key string, data []byte) ObjectHandle {
	return ObjectHandle{Key: key, Size: int64(len(data)), CRC: Checksum(data)}
}

// SharedKeys returns the keys of the shared files m references, sorted and
// unique.
func (m *Metadata) SharedKeys() []string {
	var keys []string
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			for _, kh := range st.Keyed {
				for _, f := range kh.Files {
					if f.Shared {
						keys = append(keys, f.Object.Key)
					}
				}
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Encoding of metadata files (all integers big-endian):
//
//	magic   8 bytes "WEIRCKPT"
//	version u16 (MetadataVersion)
//	length  u32: the payload's length
//	payload JSON of Metadata
//	crc     u32: CRC32C of everything before it
const (
	metadataMagic = "WEIRCKPT"
	// MetadataVersion is the version of the metadata format this build writes
	// and the only one it reads.
	MetadataVersion = 1
	headerLen       = len(metadataMagic) + 2 + 4
	trailerLen      = 4
)

// CorruptError says which part of a stored object is wrong, and why.
type CorruptError struct {
	Key    string // the object's key, when known
	Part   string // "magic", "version", "length", "checksum", "JSON" or "content" of metadata; "size" or "checksum" of an object
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("storage: %q: corrupt %s: %s", e.Key, e.Part, e.Reason)
	}
	return fmt.Sprintf("storage: corrupt metadata %s: %s", e.Part, e.Reason)
}

func corrupt(part, format string, args ...any) *CorruptError {
	return &CorruptError{Part: part, Reason: fmt.Sprintf(format, args...)}
}

// normalized returns m with Operators and each operator's Subtasks sorted
// (copies; m is not modified).
func (m Metadata) normalized() Metadata {
	m.Operators = slices.Clone(m.Operators)
	slices.SortStableFunc(m.Operators, func(a, b OperatorState) int { return strings.Compare(a.OperatorID, b.OperatorID) })
	for i := range m.Operators {
		subs := slices.Clone(m.Operators[i].Subtasks)
		slices.SortStableFunc(subs, func(a, b SubtaskState) int { return cmp.Compare(a.Subtask, b.Subtask) })
		m.Operators[i].Subtasks = subs
	}
	return m
}

// EncodeMetadata encodes m, with its operators and subtasks sorted. It does
// not validate m (WriteMetadata does).
func EncodeMetadata(m Metadata) []byte {
	payload, err := json.Marshal(m.normalized())
	if err != nil {
		panic(fmt.Sprintf("storage: encoding metadata: %v", err)) // only plain types: cannot fail
	}
	out := make([]byte, 0, headerLen+len(payload)+trailerLen)
	out = append(out, metadataMagic...)
	out = binary.BigEndian.AppendUint16(out, MetadataVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(payload)))
	out = append(out, payload...)
	return binary.BigEndian.AppendUint32(out, Checksum(out))
}

// DecodeMetadata decodes EncodeMetadata's output and validates it. Damaged
// input gives a *CorruptError naming the part that is wrong.
func DecodeMetadata(data []byte) (Metadata, error) {
	if len(data) < len(metadataMagic) || string(data[:len(metadataMagic)]) != metadataMagic {
		return Metadata{}, corrupt("magic", "not a checkpoint metadata file (no %q at its start)", metadataMagic)
	}
	if len(data) < headerLen+trailerLen {
		return Metadata{}, corrupt("length", "%d bytes, shorter than header and checksum (truncated)", len(data))
	}
	version := binary.BigEndian.Uint16(data[len(metadataMagic):])
	length := binary.BigEndian.Uint32(data[len(metadataMagic)+2:])
	if have := len(data) - headerLen - trailerLen; int64(length) != int64(have) {
		if version != MetadataVersion {
			return Metadata{}, corrupt("version", "version %d (this build reads %d), or a damaged header", version, MetadataVersion)
		}
		return Metadata{}, corrupt("length", "header says %d payload bytes, the file has %d (truncated or damaged)", length, have)
	}
	body := data[:len(data)-trailerLen]
	if want, got := binary.BigEndian.Uint32(data[len(body):]), Checksum(body); want != got {
		if version != MetadataVersion {
			return Metadata{}, corrupt("version", "version %d (this build reads %d), or a damaged header", version, MetadataVersion)
		}
		return Metadata{}, corrupt("checksum", "CRC32C %08x, stored %08x", got, want)
	}
	if version != MetadataVersion {
		return Metadata{}, corrupt("version", "version %d, this build reads %d", version, MetadataVersion)
	}
	var m Metadata
	dec := json.NewDecoder(bytes.NewReader(data[headerLen:len(body)]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Metadata{}, corrupt("JSON", "%v", err)
	}
	if dec.More() {
		return Metadata{}, corrupt("JSON", "data after the metadata object")
	}
	if err := m.Validate(); err != nil {
		return Metadata{}, corrupt("content", "%v", err)
	}
	return m, nil
}

// Validate checks that m is well formed: identifiers usable as keys, sorted
// unique operators and subtasks, key-group ranges within the operator's max
// parallelism, handles of the right kind with valid keys, inlined state
// under InlineLimit.
func (m *Metadata) Validate() error {
	if err := checkComponent(m.JobID); err != nil {
		return fmt.Errorf("job ID %q: %w", m.JobID, err)
	}
	if m.CheckpointID <= 0 {
		return fmt.Errorf("checkpoint ID %d is not positive", m.CheckpointID)
	}
	if m.KeyHash != 0 && !m.KeyHash.Valid() {
		return fmt.Errorf("key hash version %d is unknown to this build (it knows %d to %d): a newer Weir wrote this checkpoint", m.KeyHash, keygroup.HashFNV, keygroup.CurrentHash)
	}
	for i := range m.Operators {
		op := &m.Operators[i]
		if op.OperatorID == "" {
			return fmt.Errorf("operator %d has no ID", i)
		}
		if i > 0 && m.Operators[i-1].OperatorID >= op.OperatorID {
			return fmt.Errorf("operator %q: operators not sorted by ID or duplicated", op.OperatorID)
		}
		if err := op.validate(); err != nil {
			return fmt.Errorf("operator %q: %w", op.OperatorID, err)
		}
	}
	return nil
}

func (op *OperatorState) validate() error {
	if op.Parallelism < 1 || op.MaxParallelism < op.Parallelism {
		return fmt.Errorf("parallelism %d and max parallelism %d (want 1 <= parallelism <= max)", op.Parallelism, op.MaxParallelism)
	}
	for i := range op.Subtasks {
		st := &op.Subtasks[i]
		if st.Subtask < 0 || st.Subtask >= op.Parallelism {
			return fmt.Errorf("subtask %d out of range [0, %d)", st.Subtask, op.Parallelism)
		}
		if i > 0 && op.Subtasks[i-1].Subtask >= st.Subtask {
			return fmt.Errorf("subtask %d: subtasks not sorted or duplicated", st.Subtask)
		}
		if err := validateSubtask(st, op.MaxParallelism); err != nil {
			return fmt.Errorf("subtask %d: %w", st.Subtask, err)
		}
	}
	return nil
}

func validateSubtask(st *SubtaskState, maxParallelism int) error {
	for _, kh := range st.Keyed {
		if kh.KeyGroupStart < 0 || kh.KeyGroupStart > kh.KeyGroupEnd || kh.KeyGroupEnd >= maxParallelism {
			return fmt.Errorf("key groups [%d, %d] not within [0, %d)", kh.KeyGroupStart, kh.KeyGroupEnd, maxParallelism)
		}
		switch kh.Kind {
		case KindCanonical:
			if len(kh.Files) > 0 || kh.Timers != nil {
				return fmt.Errorf("canonical keyed state with native files or timers")
			}
			if err := validateObject(kh.Object); err != nil {
				return err
			}
		case KindNative:
			if kh.Object != (ObjectHandle{}) {
				return fmt.Errorf("native keyed state with a canonical object")
			}
			names := make(map[string]bool, len(kh.Files))
			for _, f := range kh.Files {
				if err := checkComponent(f.Name); err != nil || names[f.Name] {
					return fmt.Errorf("native file name %q invalid or repeated", f.Name)
				}
				names[f.Name] = true
				if err := validateObject(f.Object); err != nil {
					return err
				}
			}
			if kh.Timers != nil {
				if err := validateObject(*kh.Timers); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("keyed state kind %q (want %q or %q)", kh.Kind, KindCanonical, KindNative)
		}
	}
	if st.Operator != nil {
		if st.Inline != nil {
			return fmt.Errorf("operator state both inlined and in an object")
		}
		if err := validateObject(*st.Operator); err != nil {
			return err
		}
	}
	if len(st.Inline) >= InlineLimit {
		return fmt.Errorf("inlined operator state of %d bytes (the limit is %d)", len(st.Inline), InlineLimit)
	}
	for _, hs := range [][]ObjectHandle{st.InputChannels, st.OutputChannels} {
		for _, h := range hs {
			if err := validateObject(h); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateObject(h ObjectHandle) error {
	if err := checkKey(h.Key); err != nil {
		return fmt.Errorf("object handle: %w", err)
	}
	if h.Size < 0 {
		return fmt.Errorf("object %q has negative size %d", h.Key, h.Size)
	}
	return nil
}
