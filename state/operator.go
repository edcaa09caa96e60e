package state

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/snapshot"
)

// OperatorStore holds the non-keyed state of one operator subtask: list
// state (for example a source's partition offsets), union list state and
// broadcast state. It lives in memory; operator state is expected to be
// small, so Snapshot encodes it synchronously. Owned by the task goroutine.
type OperatorStore struct {
	states   map[string]operatorState
	restored map[string]snapshot.OperatorState // restored, not registered yet
	// readOnly, when not empty, makes writes to the broadcast state panic
	// and names the code that may only read it (SetBroadcastReadOnly).
	readOnly string
}

type operatorState interface {
	snapshot() (snapshot.OperatorState, error)
}

// NewOperatorStore returns an empty store.
func NewOperatorStore() *OperatorStore {
	return &OperatorStore{states: map[string]operatorState{}, restored: map[string]snapshot.OperatorState{}}
}

// Restore loads this subtask's share of the state from a checkpoint: the
// encoding Snapshot made (the runtime redistributes it first when the
// parallelism changed). The runtime calls it before the states are
// registered; user code has no reason to.
func (s *OperatorStore) Restore(encoded []byte) error {
	snap, err := snapshot.DecodeOperator(encoded)
	if err != nil {
		return err
	}
	s.restore(snap)
	return nil
}

func (s *OperatorStore) restore(snap snapshot.OperatorSnapshot) {
	for _, st := range snap.States {
		s.restored[st.Name] = st
	}
}

// Snapshot encodes every state for a checkpoint (nil when there is none),
// including restored states no one has registered (so they survive a job
// version that does not use them). The runtime calls it at barriers.
func (s *OperatorStore) Snapshot() ([]byte, error) {
	snap, err := s.snapshot()
	if err != nil || len(snap.States) == 0 {
		return nil, err
	}
	return snapshot.EncodeOperator(snap), nil
}

func (s *OperatorStore) snapshot() (snapshot.OperatorSnapshot, error) {
	var out snapshot.OperatorSnapshot
	for _, name := range slices.Sorted(maps.Keys(s.states)) {
		st, err := s.states[name].snapshot()
		if err != nil {
			return out, err
		}
		out.States = append(out.States, st)
	}
	for name, st := range s.restored {
		if _, ok := s.states[name]; !ok {
			out.States = append(out.States, st)
		}
	}
	sort.Slice(out.States, func(i, j int) bool { return out.States[i].Name < out.States[j].Name })
	return out, nil
}

func registerOperator[H operatorState](s *OperatorStore, meta snapshot.StateMeta, evolve snapshot.Evolve, create func(restored [][]byte) (H, error)) H {
	name, kind := meta.Name, meta.Kind
	if name == "" {
		panic(fmt.Sprintf("state: %s state descriptor without a name", kind))
	}
	if h, ok := s.states[name]; ok {
		typed, ok := h.(H)
		if !ok {
			panic(fmt.Sprintf("operator state %q is registered as %T, requested as %T", name, h, *new(H)))
		}
		return typed
	}
	var elems [][]byte
	if r, ok := s.restored[name]; ok {
		if r.Kind != kind {
			panic(fmt.Sprintf("operator state %q was restored as %s state, requested as %s state", name, r.Kind, kind))
		}
		restored := snapshot.StateMeta{Name: name, Kind: r.Kind, Codec: r.Codec, Schema: r.Schema, KeySchema: r.KeySchema}
		mig, err := snapshot.Resolve(restored, meta, evolve)
		if err == nil {
			elems, err = migrateOperator(kind, mig, r.Elements)
		}
		if err != nil {
			panic(&BackendError{State: name, Op: "restore", Err: err})
		}
	}
	h, err := create(elems)
	if err != nil {
		panic(&BackendError{State: name, Op: "restore", Err: err})
	}
	s.states[name] = h
	delete(s.restored, name)
	return h
}

// GetOperatorListState returns a list state whose elements are split evenly
// over the new subtasks when the job is rescaled (Flink's ListState of
// CheckpointedFunction). The descriptor's TTL must be nil.
func GetOperatorListState[V any](s *OperatorStore, d ListDescriptor[V]) ListState[V] {
	return getOperatorList(s, d, snapshot.KindOperatorList)
}

// GetUnionListState returns a list state of which every subtask gets all
// elements of all subtasks when the job is restored.
func GetUnionListState[V any](s *OperatorStore, d ListDescriptor[V]) ListState[V] {
	return getOperatorList(s, d, snapshot.KindOperatorUnion)
}

func getOperatorList[V any](s *OperatorStore, d ListDescriptor[V], kind snapshot.Kind) ListState[V] {
	d.Codec = codecFor(d.Codec, d.Name, "Codec")
	if d.TTL != nil {
		panic(fmt.Sprintf("operator state %q: TTL applies to keyed state only", d.Name))
	}
	meta := snapshot.StateMeta{Name: d.Name, Kind: kind, Codec: codecID[V](d.Codec), Schema: schemaOf(d.Codec)}
	evolve := evolveOne(meta, part[V]{"list element", d.Codec, meta.Schema})
	return registerOperator(s, meta, evolve, func(restored [][]byte) (*operatorList[V], error) {
		l := &operatorList[V]{name: d.Name, kind: kind, codec: d.Codec, meta: meta}
		for _, b := range restored {
			v, _, err := d.Codec.Decode(b)
			if err != nil {
				return nil, err
			}
			l.elems = append(l.elems, v)
		}
		return l, nil
	})
}

type operatorList[V any] struct {
	name  string
	kind  snapshot.Kind
	codec codec.Codec[V]
	meta  snapshot.StateMeta // codec identity and schema, recorded in snapshots
	elems []V
}

func (l *operatorList[V]) Get() []V {
	if len(l.elems) == 0 {
		return nil
	}
	return slices.Clone(l.elems)
}
func (l *operatorList[V]) Add(v V)       { l.elems = append(l.elems, v) }
func (l *operatorList[V]) AddAll(vs []V) { l.elems = append(l.elems, vs...) }
func (l *operatorList[V]) Update(vs []V) { l.elems = slices.Clone(vs) }
func (l *operatorList[V]) Clear()        { l.elems = nil }
func (l *operatorList[V]) snapshot() (snapshot.OperatorState, error) {
	st := snapshot.OperatorState{Name: l.name, Kind: l.kind, Codec: l.meta.Codec, Schema: l.meta.Schema}
	for _, v := range l.elems {
		st.Elements = append(st.Elements, l.codec.AppendEncode(nil, v))
	}
	return st, nil
}

// migrateOperator rewrites restored operator state elements through m
// (broadcast entries: uvarint key length, key, value).
func migrateOperator(kind snapshot.Kind, m snapshot.Migration, elems [][]byte) ([][]byte, error) {
	if m.None() {
		return elems, nil
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		var err error
		if kind != snapshot.KindBroadcast {
			if out[i], err = m.Value(nil, e); err != nil {
				return nil, err
			}
			continue
		}
		n, w := binary.Uvarint(e)
		if w <= 0 || n > uint64(len(e)-w) {
			return nil, fmt.Errorf("corrupt broadcast entry")
		}
		k, v := e[w:w+int(n)], e[w+int(n):]
		if m.UserKey != nil {
			if k, err = m.UserKey(nil, k); err != nil {
				return nil, err
			}
		}
		if m.Value != nil {
			if v, err = m.Value(nil, v); err != nil {
				return nil, err
			}
		}
		out[i] = append(append(binary.AppendUvarint(nil, uint64(len(k))), k...), v...)
	}
	return out, nil
}
