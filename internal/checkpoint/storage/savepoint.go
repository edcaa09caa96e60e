package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SavepointPrefix begins the name of every savepoint folder:
// "savepoint-<first 6 characters of the job id>-<12 random hex>", as Flink
// names them.
const SavepointPrefix = "savepoint-"

// SavepointDirName returns a fresh savepoint folder name for jobID. The
// random part keeps two savepoints of one job into one target apart.
func SavepointDirName(jobID string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	short := jobID
	if len(short) > 6 {
		short = short[:6]
	}
	return SavepointPrefix + short + "-" + hex.EncodeToString(b[:])
}

// IsSavepointDir reports whether a folder name is a savepoint's.
func IsSavepointDir(name string) bool { return strings.HasPrefix(name, SavepointPrefix) }

// relocate maps a key of a checkpoint of jobID to its key inside a savepoint
// folder: "<job>/chk-<n>/<name>" becomes "<name>" and "<job>/shared/<name>"
// becomes "shared/<name>", so every key of a savepoint is relative to its
// folder and the folder can be copied anywhere.
func relocate(jobID string, id int64, key string) string {
	k := strings.TrimPrefix(key, jobID+"/")
	return strings.TrimPrefix(k, CheckpointDir(id)+"/")
}

// WriteSavepoint makes a self-contained savepoint of checkpoint m, whose
// objects are in src: it copies every object m names (verifying each one's
// size and checksum) into dst, the savepoint folder, with keys relative to
// it, then writes dst's MetadataName last. It returns the savepoint's
// metadata. Copying rather than having tasks write into dst keeps the tasks'
// upload path (and the shared-file reuse of incremental checkpoints) one path;
// the cost is writing a savepoint's bytes twice, except between file stores
// on one file system, where the copies are hard links (copyObject). On
// failure it deletes what it wrote into dst.
func WriteSavepoint(ctx context.Context, src *Store, m Metadata, dst *Store) (*Metadata, error) {
	out := m.normalized()
	out.Savepoint = true
	out.Operators = make([]OperatorState, len(m.Operators))
	written := map[string]string{} // new key -> old key
	fail := func(err error) (*Metadata, error) {
		var errs []error
		for k := range written {
			if derr := dst.Delete(context.Background(), k); derr != nil {
				errs = append(errs, derr)
			}
		}
		if len(errs) > 0 {
			err = fmt.Errorf("%w (cleaning up the partial savepoint in %s also failed: %w)", err, dst.URL(), errors.Join(errs...))
		}
		return nil, err
	}
	copyObj := func(h ObjectHandle) (ObjectHandle, error) {
		nk := relocate(m.JobID, m.CheckpointID, h.Key)
		if nk == MetadataName {
			return h, fmt.Errorf("storage: savepoint: object %q would overwrite the savepoint's %s", h.Key, MetadataName)
		}
		if old, ok := written[nk]; ok {
			if old != h.Key {
				return h, fmt.Errorf("storage: savepoint: objects %q and %q both map to %q", old, h.Key, nk)
			}
			return ObjectHandle{Key: nk, Size: h.Size, CRC: h.CRC}, nil
		}
		written[nk] = h.Key
		if err := copyObject(ctx, src, h, dst, nk); err != nil {
			return h, fmt.Errorf("storage: savepoint: copying %q from %s into %s: %w", h.Key, src.URL(), dst.URL(), err)
		}
		return ObjectHandle{Key: nk, Size: h.Size, CRC: h.CRC}, nil
	}
	copyAll := func(hs []ObjectHandle) ([]ObjectHandle, error) {
		var res []ObjectHandle
		for _, h := range hs {
			nh, err := copyObj(h)
			if err != nil {
				return nil, err
			}
			res = append(res, nh)
		}
		return res, nil
	}
	for i, op := range m.normalized().Operators {
		nop := op
		nop.Subtasks = make([]SubtaskState, len(op.Subtasks))
		for j, st := range op.Subtasks {
			ns := st
			ns.Keyed = make([]KeyedHandle, len(st.Keyed))
			for k, kh := range st.Keyed {
				nk := kh
				var err error
				if kh.Kind == KindCanonical {
					if nk.Object, err = copyObj(kh.Object); err != nil {
						return fail(err)
					}
				}
				nk.Files = make([]NativeFile, len(kh.Files))
				for f, nf := range kh.Files {
					nf.Object, err = copyObj(nf.Object)
					if err != nil {
						return fail(err)
					}
					// A savepoint's files belong to it alone: nothing is
					// shared with checkpoints or other savepoints.
					nf.Shared = false
					nk.Files[f] = nf
				}
				if len(kh.Files) == 0 {
					nk.Files = nil
				}
				if kh.Timers != nil {
					th, err := copyObj(*kh.Timers)
					if err != nil {
						return fail(err)
					}
					nk.Timers = &th
				}
				ns.Keyed[k] = nk
			}
			if len(st.Keyed) == 0 {
				ns.Keyed = nil
			}
			if st.Operator != nil {
				oh, err := copyObj(*st.Operator)
				if err != nil {
					return fail(err)
				}
				ns.Operator = &oh
			}
			var err error
			if ns.InputChannels, err = copyAll(st.InputChannels); err != nil {
				return fail(err)
			}
			if ns.OutputChannels, err = copyAll(st.OutputChannels); err != nil {
				return fail(err)
			}
			nop.Subtasks[j] = ns
		}
		if len(op.Subtasks) == 0 {
			nop.Subtasks = nil
		}
		out.Operators[i] = nop
	}
	if err := out.Validate(); err != nil {
		return fail(fmt.Errorf("storage: savepoint of checkpoint %d of job %q: %w", m.CheckpointID, m.JobID, err))
	}
	data := EncodeMetadata(out)
	if len(data) > MaxMetadataSize {
		return fail(fmt.Errorf("storage: savepoint metadata: %d bytes, more than %d", len(data), MaxMetadataSize))
	}
	if err := dst.Put(ctx, MetadataName, data); err != nil {
		return fail(fmt.Errorf("storage: writing the savepoint's %s into %s: %w", MetadataName, dst.URL(), err))
	}
	return &out, nil
}

// ReadSavepointMetadata reads the metadata of the savepoint whose folder is
// s's root.
func ReadSavepointMetadata(ctx context.Context, s *Store) (*Metadata, error) {
	data, err := s.Get(ctx, MetadataName)
	if err != nil {
		return nil, err
	}
	m, err := DecodeMetadata(data)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Key = MetadataName
		}
		return nil, err
	}
	return &m, nil
}

// OpenSavepointDir opens (creating a missing file root) the folder name
// under target, the savepoint target directory, as a store: the store every
// key of the savepoint's metadata resolves on.
func OpenSavepointDir(ctx context.Context, target, name string) (*Store, error) {
	loc, err := parseLocation(target)
	if err != nil {
		return nil, fmt.Errorf("storage: savepoint target directory %q: %w", target, err)
	}
	if err := checkComponent(name); err != nil {
		return nil, fmt.Errorf("storage: savepoint folder name: %w", err)
	}
	return Open(ctx, loc.withElements(append(loc.elements(), name)).String())
}
