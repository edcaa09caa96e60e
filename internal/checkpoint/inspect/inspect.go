package inspect

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/pebblekv"
)

// Names of the operator states Weir's built-in operators write (see
// internal/operator); the report explains them.
const (
	sourceSplitsState   = "source-reader-splits"
	sinkPendingState    = "sink-pending-committables"
	splitWatermarkState = "source-split-watermarks"
)

// Report is what a checkpoint or savepoint holds.
type Report struct {
	Path           string     `json:"path"`
	StoreURL       string     `json:"storeUrl"`
	JobID          string     `json:"jobId"`
	JobName        string     `json:"jobName"`
	CheckpointID   int64      `json:"checkpointId"`
	Savepoint      bool       `json:"savepoint"`
	TriggerMillis  int64      `json:"triggerMillis"`
	CompleteMillis int64      `json:"completeMillis"`
	Operators      []Operator `json:"operators"`
	// KeyHash is the key hash version the keyed state's key groups were
	// computed with (keygroup.HashVersion; a restore keeps it): the
	// metadata's, 1 for keyed state written before versions were
	// recorded, 0 when nothing is keyed.
	KeyHash int `json:"keyHash"`
}

// Operator is the state of one operator.
type Operator struct {
	UID              string          `json:"uid,omitempty"`
	Name             string          `json:"name"`
	OperatorID       string          `json:"operatorId"` // the stable ID operators are matched by
	Parallelism      int             `json:"parallelism"`
	MaxParallelism   int             `json:"maxParallelism"`
	CoordinatorBytes int             `json:"coordinatorBytes,omitempty"` // a source's split enumerator state
	KeyedRanges      []KeyedRange    `json:"keyedRanges,omitempty"`
	KeyedStates      []KeyedState    `json:"keyedStates,omitempty"` // summed over the ranges, sorted by name
	OperatorStates   []OperatorState `json:"operatorStates,omitempty"`
	SourceSplits     int             `json:"sourceSplits,omitempty"` // reader splits held by the subtasks (with their positions)
	PendingCommits   []PendingCommit `json:"pendingCommits,omitempty"`
}

// KeyedRange is one stored piece of keyed state.
type KeyedRange struct {
	Subtask       int    `json:"subtask"`
	KeyGroupStart int    `json:"keyGroupStart"`
	KeyGroupEnd   int    `json:"keyGroupEnd"`
	Format        string `json:"format"` // storage.KindCanonical or storage.KindNative
	Bytes         int64  `json:"bytes"`  // canonical: the snapshot file; native: all its files
	Files         int    `json:"files,omitempty"`
	SharedFiles   int    `json:"sharedFiles,omitempty"` // native: files under shared/ (incremental)
	TimerBytes    int64  `json:"timerBytes,omitempty"`  // native: the canonical timers snapshot
}

// KeyedState sums one keyed state (or the timers) over the canonical snapshots.
type KeyedState struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	TTLMs int64  `json:"ttlMillis,omitempty"`
	Codec string `json:"codec,omitempty"` // the codec identity recorded (snapshot format 2 on); "" unknown
	// Schema and KeySchema are the recorded schemas of the values and of
	// map user keys, as Go-like type syntax (snapshot format 3 on); "" none.
	Schema    string `json:"schema,omitempty"`
	KeySchema string `json:"keySchema,omitempty"`
	Keys      int64  `json:"keys"`             // distinct keys (per key group; key groups are disjoint)
	Entries   int64  `json:"entries"`          // canonical: namespaces, list elements and map entries count one each; native: Pebble records (a list is one per key and namespace)
	Bytes     int64  `json:"bytes"`            // canonical: keys, namespaces, user keys and values; native: records as stored
	Native    bool   `json:"native,omitempty"` // some of it was counted from Pebble's native files
}

// OperatorState is one non-keyed state, summed over the subtasks.
type OperatorState struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Elements int    `json:"elements"`
	Bytes    int64  `json:"bytes"`
	Meaning  string `json:"meaning,omitempty"` // for states Weir's operators write
	Codec    string `json:"codec,omitempty"`   // the codec identity recorded (operator format 2 on)
	// Schema and KeySchema as KeyedState's (operator format 3 on).
	Schema    string `json:"schema,omitempty"`
	KeySchema string `json:"keySchema,omitempty"`
}

// schemaText renders a recorded schema (codec.Schema.AppendBinary) as
// Go-like type syntax; "" stays "".
func schemaText(b string) string {
	if b == "" {
		return ""
	}
	s, err := codec.ParseSchema([]byte(b))
	if err != nil {
		return fmt.Sprintf("(corrupt schema: %v)", err)
	}
	return s.String()
}

// PendingCommit is a committable a two-phase-commit sink prepared and had
// not committed when the checkpoint was taken; it is committed on restore.
type PendingCommit struct {
	Subtask    int   `json:"subtask"`
	Checkpoint int64 `json:"checkpoint"` // the checkpoint it was prepared at
	Bytes      int   `json:"bytes"`
}

// FileError names the stored file that could not be read or decoded.
type FileError struct {
	File string // a URL or path
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.File, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Inspect reads the checkpoint or savepoint at path (a chk-<n> directory or
// its _metadata file, as a path or URL).
func Inspect(ctx context.Context, path string) (*Report, error) {
	s, m, err := storage.Resolve(ctx, path)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	r := &Report{Path: path, StoreURL: s.URL(), JobID: m.JobID, JobName: m.JobName, CheckpointID: m.CheckpointID,
		Savepoint: m.Savepoint, TriggerMillis: m.TriggerMillis, CompleteMillis: m.CompleteMillis, KeyHash: int(m.KeyHashVersion())}
	for i := range m.Operators {
		op, err := inspectOperator(ctx, s, &m.Operators[i])
		if err != nil {
			return nil, err
		}
		r.Operators = append(r.Operators, op)
	}
	return r, nil
}

func inspectOperator(ctx context.Context, s *storage.Store, os *storage.OperatorState) (Operator, error) {
	op := Operator{UID: os.UID, Name: os.Name, OperatorID: os.OperatorID, Parallelism: os.Parallelism,
		MaxParallelism: os.MaxParallelism, CoordinatorBytes: len(os.Coordinator)}
	keyed := map[string]*KeyedState{}
	opStates := map[string]*OperatorState{}
	for _, st := range os.Subtasks {
		for _, kh := range st.Keyed {
			kr := KeyedRange{Subtask: st.Subtask, KeyGroupStart: kh.KeyGroupStart, KeyGroupEnd: kh.KeyGroupEnd, Format: kh.Kind}
			switch kh.Kind {
			case storage.KindCanonical:
				kr.Bytes = kh.Object.Size
				if err := sumCanonical(ctx, s, kh.Object, keyed); err != nil {
					return op, err
				}
			case storage.KindNative:
				for _, f := range kh.Files {
					kr.Files++
					kr.Bytes += f.Object.Size
					if f.Shared {
						kr.SharedFiles++
					}
				}
				if err := sumNative(ctx, s, kh, keyed); err != nil {
					return op, err
				}
				if kh.Timers != nil {
					kr.TimerBytes = kh.Timers.Size
					if err := sumCanonical(ctx, s, *kh.Timers, keyed); err != nil {
						return op, err
					}
				}
			}
			op.KeyedRanges = append(op.KeyedRanges, kr)
		}
		b := st.Inline
		file := "inline operator state in " + storage.MetadataName
		if st.Operator != nil {
			file = s.URL() + "/" + st.Operator.Key
			var err error
			if b, err = storage.ReadVerified(ctx, s, *st.Operator); err != nil {
				return op, &FileError{File: file, Err: err}
			}
		}
		if b == nil {
			continue
		}
		snap, err := snapshot.DecodeOperator(b)
		if err != nil {
			return op, &FileError{File: fmt.Sprintf("%s (operator %q subtask %d)", file, os.Name, st.Subtask), Err: err}
		}
		for _, ost := range snap.States {
			sum := opStates[ost.Name]
			if sum == nil {
				sum = &OperatorState{Name: ost.Name, Kind: ost.Kind.String(), Meaning: meaning(ost.Name), Codec: ost.Codec,
					Schema: schemaText(ost.Schema), KeySchema: schemaText(ost.KeySchema)}
				opStates[ost.Name] = sum
			}
			// Broadcast state is the same in every subtask: count one copy.
			if ost.Kind == snapshot.KindBroadcast && sum.Elements > 0 {
				continue
			}
			sum.Elements += len(ost.Elements)
			for _, e := range ost.Elements {
				sum.Bytes += int64(len(e))
			}
			switch ost.Name {
			case sourceSplitsState:
				op.SourceSplits += len(ost.Elements)
			case sinkPendingState:
				for _, e := range ost.Elements {
					op.PendingCommits = append(op.PendingCommits, pendingCommit(st.Subtask, e))
				}
			}
		}
	}
	for _, k := range sortedKeys(keyed) {
		op.KeyedStates = append(op.KeyedStates, *keyed[k])
	}
	for _, k := range sortedKeys(opStates) {
		op.OperatorStates = append(op.OperatorStates, *opStates[k])
	}
	return op, nil
}

// pendingCommit decodes the framing of a sink's pending committable: the
// element is encoded by codec.Bytes (internal/operator's sink), and starts
// with the 8-byte big-endian checkpoint id. Checkpoint is -1 when the
// element does not have that shape.
func pendingCommit(subtask int, e []byte) PendingCommit {
	pc := PendingCommit{Subtask: subtask, Checkpoint: -1, Bytes: len(e)}
	if v, n, err := codec.Bytes().Decode(e); err == nil && n == len(e) && len(v) >= 8 {
		pc.Checkpoint = int64(binary.BigEndian.Uint64(v))
	}
	return pc
}

func meaning(name string) string {
	switch name {
	case sourceSplitsState:
		return "source reader splits with their positions"
	case sinkPendingState:
		return "sink committables prepared, not yet committed"
	case splitWatermarkState:
		return "per-split watermarks of the source"
	}
	return ""
}

// seed makes the key hashes of one process consistent.
var seed = maphash.MakeSeed()

// sumCanonical adds the states of the canonical snapshot at h to sums,
// reading one key group at a time.
func sumCanonical(ctx context.Context, s *storage.Store, h storage.ObjectHandle, sums map[string]*KeyedState) error {
	file := s.URL() + "/" + h.Key
	ra, err := s.Open(ctx, h.Key)
	if err != nil {
		return &FileError{File: file, Err: err}
	}
	defer ra.Close()
	if ra.Size() != h.Size {
		return &FileError{File: file, Err: fmt.Errorf("%d bytes, the metadata says %d (truncated or replaced)", ra.Size(), h.Size)}
	}
	sr, err := snapshot.Open(ra, ra.Size())
	if err != nil {
		return &FileError{File: file, Err: err}
	}
	states := sr.States()
	local := make([]*KeyedState, len(states))
	for i, m := range states {
		sum := sums[m.Name]
		if sum == nil {
			sum = &KeyedState{Name: m.Name, Kind: m.Kind.String(), TTLMs: m.TTLMillis, Codec: m.Codec,
				Schema: schemaText(m.Schema), KeySchema: schemaText(m.KeySchema)}
			sums[m.Name] = sum
		}
		local[i] = sum
	}
	// Distinct keys per state within one key group: a key lives in exactly
	// one key group, so summing over key groups counts each key once.
	seen := make([]map[uint64]struct{}, len(states))
	for _, kg := range sr.KeyGroups() {
		for i := range seen {
			clear(seen[i])
		}
		err := sr.ReadKeyGroup(kg, func(e snapshot.Entry) error {
			sum := local[e.State]
			sum.Entries++
			sum.Bytes += int64(len(e.Key) + len(e.Namespace) + len(e.UserKey) + len(e.Value))
			if seen[e.State] == nil {
				seen[e.State] = map[uint64]struct{}{}
			}
			k := maphash.Bytes(seed, e.Key)
			if _, ok := seen[e.State][k]; !ok {
				seen[e.State][k] = struct{}{}
				sum.Keys++
			}
			return nil
		})
		if err != nil {
			return &FileError{File: file, Err: err}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sumNative downloads the files of a native (Pebble) keyed state handle
// into a temporary directory, checking each, and adds its states' sums:
// Pebble opens files, not ranges of an object store. The directory is
// removed before returning; disk, not memory, holds the files.
func sumNative(ctx context.Context, s *storage.Store, kh storage.KeyedHandle, sums map[string]*KeyedState) error {
	dir, err := os.MkdirTemp("", "weir-inspect-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, f := range kh.Files {
		file := s.URL() + "/" + f.Object.Key
		if f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." {
			return &FileError{File: file, Err: fmt.Errorf("bad file name %q in a native snapshot", f.Name)}
		}
		// SSTs may be links (storage.GetFile): Pebble opens them read-only.
		if err := storage.GetFile(ctx, s, f.Object, filepath.Join(dir, f.Name), filepath.Ext(f.Name) == ".sst"); err != nil {
			return &FileError{File: file, Err: err}
		}
	}
	states, err := pebblekv.SummarizeNative(dir, keygroup.Range{Start: kh.KeyGroupStart, End: kh.KeyGroupEnd})
	if err != nil {
		return &FileError{File: fmt.Sprintf("native Pebble checkpoint of key groups %d-%d", kh.KeyGroupStart, kh.KeyGroupEnd), Err: err}
	}
	for _, st := range states {
		sum := sums[st.Meta.Name]
		if sum == nil {
			sum = &KeyedState{Name: st.Meta.Name, Kind: st.Meta.Kind.String(), TTLMs: st.Meta.TTLMillis, Codec: st.Meta.Codec,
				Schema: schemaText(st.Meta.Schema), KeySchema: schemaText(st.Meta.KeySchema)}
			sums[st.Meta.Name] = sum
		}
		sum.Native = true
		sum.Keys += st.Keys
		sum.Entries += st.Records
		sum.Bytes += st.Bytes
	}
	return nil
}
