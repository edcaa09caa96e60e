package storage

import (
	"maps"
	"slices"
)

// Registry counts which retained checkpoints reference which shared files
// (Flink's SharedStateRegistry), so that a shared file is deleted when the
// last checkpoint referencing it is discarded. It is pure (no I/O) and not
// safe for concurrent use. The zero value is empty and ready.
type Registry struct {
	byCheckpoint map[int64][]string        // registered checkpoint -> its shared keys, sorted, unique
	refs         map[string]map[int64]bool // shared key -> the registered checkpoints referencing it
}

// Register records that checkpoint checkpointID references sharedKeys.
// Registering a checkpoint again adds to its keys.
func (r *Registry) Register(checkpointID int64, sharedKeys []string) {
	if r.byCheckpoint == nil {
		r.byCheckpoint = make(map[int64][]string)
		r.refs = make(map[string]map[int64]bool)
	}
	keys := append(slices.Clone(r.byCheckpoint[checkpointID]), sharedKeys...)
	slices.Sort(keys)
	r.byCheckpoint[checkpointID] = slices.Compact(keys)
	for _, k := range sharedKeys {
		if r.refs[k] == nil {
			r.refs[k] = make(map[int64]bool)
		}
		r.refs[k][checkpointID] = true
	}
}

// Discard forgets checkpoint checkpointID and returns, sorted, the shared
// keys it referenced that no remaining registered checkpoint references:
// those can be deleted. Discarding an unknown checkpoint returns nil.
func (r *Registry) Discard(checkpointID int64) (deletable []string) {
	keys, ok := r.byCheckpoint[checkpointID]
	if !ok {
		return nil
	}
	delete(r.byCheckpoint, checkpointID)
	for _, k := range keys {
		delete(r.refs[k], checkpointID)
		if len(r.refs[k]) == 0 {
			delete(r.refs, k)
			deletable = append(deletable, k)
		}
	}
	return deletable
}

// Rebuild replaces r's contents with the shared files of the given
// checkpoints (the retained ones, on resume).
func (r *Registry) Rebuild(retained []Metadata) {
	*r = Registry{}
	for i := range retained {
		r.Register(retained[i].CheckpointID, retained[i].SharedKeys())
	}
}

// Checkpoints returns the registered checkpoints, ascending.
func (r *Registry) Checkpoints() []int64 {
	return slices.Sorted(maps.Keys(r.byCheckpoint))
}

// ReferencedKeys returns every key a registered checkpoint references.
func (r *Registry) ReferencedKeys() []string {
	var keys []string
	for k, ids := range r.refs {
		if len(ids) > 0 {
			keys = append(keys, k)
		}
	}
	return keys
}

// References returns the registered checkpoints that reference key, ascending.
func (r *Registry) References(key string) []int64 {
	return slices.Sorted(maps.Keys(r.refs[key]))
}
