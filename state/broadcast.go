package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"slices"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/snapshot"
)

// BroadcastDescriptor declares a BroadcastState.
type BroadcastDescriptor[K comparable, V any] struct {
	Name       string
	KeyCodec   codec.Codec[K]
	ValueCodec codec.Codec[V]
}

// ReadOnlyBroadcastState is the view of a broadcast state that the element
// side of a connected broadcast stream gets, in ProcessElement and OnTimer
// (Flink's ReadOnlyBroadcastState): it has no method that writes. Values
// read from it are the stored ones: do not change them in place there
// either, or the subtasks' copies drift apart.
type ReadOnlyBroadcastState[K comparable, V any] interface {
	Get(k K) (V, bool)
	Contains(k K) bool
	// All yields the entries in no particular order.
	All() iter.Seq2[K, V]
}

// BroadcastState is a map replicated on every subtask of an operator: the
// broadcast side of a connected stream writes it (identically everywhere),
// the element side reads it (ReadOnlyBroadcastState). On restore at any
// parallelism every subtask gets a copy.
//
// User code may change a value in place (a map or slice value, say) instead
// of putting a new one: the state is owned by the task goroutine and a
// checkpoint encodes it on that goroutine, at the barrier, before the next
// element, so a snapshot never reads a value while it is being written.
type BroadcastState[K comparable, V any] interface {
	ReadOnlyBroadcastState[K, V]
	Put(k K, v V)
	Remove(k K)
	Clear()
}

// ReadOnlyBroadcastStore is the broadcast state of an operator as its
// element side sees it: GetReadOnlyBroadcastState reads from it, nothing
// writes through it. The runtime hands it out (OperatorStore.ReadOnly).
type ReadOnlyBroadcastStore struct{ s *OperatorStore }

// ReadOnly returns the read-only view of the store's broadcast state.
func (s *OperatorStore) ReadOnly() ReadOnlyBroadcastStore { return ReadOnlyBroadcastStore{s} }

// SetBroadcastReadOnly makes every write to the store's broadcast state
// (Put, Remove, Clear, through any handle, however obtained) panic with a
// permanent error until it is called again with "". where names the code
// that may only read, for the message. The broadcast operators call it:
// broadcast state is written only while a broadcast element is processed.
func (s *OperatorStore) SetBroadcastReadOnly(where string) { s.readOnly = where }

// GetBroadcastState returns the broadcast state described by d, for the
// broadcast side of a connected stream (BroadcastContext.Broadcast).
func GetBroadcastState[K comparable, V any](s *OperatorStore, d BroadcastDescriptor[K, V]) BroadcastState[K, V] {
	return getBroadcast(s, d)
}

// GetReadOnlyBroadcastState returns the broadcast state described by d,
// read-only, for the element side of a connected stream (its contexts'
// Broadcast): the same entries GetBroadcastState gives the broadcast side.
func GetReadOnlyBroadcastState[K comparable, V any](s ReadOnlyBroadcastStore, d BroadcastDescriptor[K, V]) ReadOnlyBroadcastState[K, V] {
	if s.s == nil {
		panic(fmt.Sprintf("state: broadcast state %q read from a zero ReadOnlyBroadcastStore (use the one the context's Broadcast gives)", d.Name))
	}
	return readOnlyBroadcast[K, V]{getBroadcast(s.s, d)}
}

func getBroadcast[K comparable, V any](s *OperatorStore, d BroadcastDescriptor[K, V]) *broadcast[K, V] {
	d.KeyCodec = codecFor(d.KeyCodec, d.Name, "KeyCodec")
	d.ValueCodec = codecFor(d.ValueCodec, d.Name, "ValueCodec")
	meta := broadcastMeta(d)
	evolve := evolveTwo(meta, part[K]{"key", d.KeyCodec, meta.KeySchema}, part[V]{"value", d.ValueCodec, meta.Schema})
	return registerOperator(s, meta, evolve, func(restored [][]byte) (*broadcast[K, V], error) {
		b := &broadcast[K, V]{s: s, d: d, m: map[K]V{}}
		for _, e := range restored {
			n, w := binary.Uvarint(e)
			if w <= 0 || n > uint64(len(e)-w) {
				return nil, fmt.Errorf("corrupt broadcast entry")
			}
			k, _, err := d.KeyCodec.Decode(e[w : w+int(n)])
			if err != nil {
				return nil, err
			}
			v, _, err := d.ValueCodec.Decode(e[w+int(n):])
			if err != nil {
				return nil, err
			}
			b.m[k] = v
		}
		return b, nil
	})
}

// broadcast is a broadcast state: a Go map owned by the task goroutine.
type broadcast[K comparable, V any] struct {
	s *OperatorStore // for its read-only guard
	d BroadcastDescriptor[K, V]
	m map[K]V
}

func (b *broadcast[K, V]) Get(k K) (V, bool) { v, ok := b.m[k]; return v, ok }
func (b *broadcast[K, V]) Contains(k K) bool { _, ok := b.m[k]; return ok }
func (b *broadcast[K, V]) Put(k K, v V)      { b.writable("Put"); b.m[k] = v }
func (b *broadcast[K, V]) Remove(k K)        { b.writable("Remove"); delete(b.m, k) }
func (b *broadcast[K, V]) Clear()            { b.writable("Clear"); clear(b.m) }
func (b *broadcast[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for k, v := range b.m {
			if !yield(k, v) {
				return
			}
		}
	}
}

// writable panics if the store is read-only now (SetBroadcastReadOnly):
// a write there would change one subtask's copy only. Restarting cannot
// help, so the error is permanent.
func (b *broadcast[K, V]) writable(op string) {
	if b.s.readOnly != "" {
		panic(failure.Permanent(fmt.Errorf("broadcast state %q: %s from %s, where broadcast state is read-only: "+
			"only ProcessBroadcastElement may write it (each subtask's copy must see the same writes); "+
			"move the write there, or keep per-key data in keyed state", b.d.Name, op, b.s.readOnly)))
	}
}

// snapshot encodes the entries sorted by their bytes, so every subtask's
// copy encodes identically. It runs on the task goroutine, so values the
// task changes in place are never read while being written.
func (b *broadcast[K, V]) snapshot() (snapshot.OperatorState, error) {
	meta := broadcastMeta(b.d)
	st := snapshot.OperatorState{Name: b.d.Name, Kind: snapshot.KindBroadcast, Codec: meta.Codec, Schema: meta.Schema, KeySchema: meta.KeySchema}
	for k, v := range b.m {
		kb := b.d.KeyCodec.AppendEncode(nil, k)
		e := binary.AppendUvarint(nil, uint64(len(kb)))
		e = append(e, kb...)
		st.Elements = append(st.Elements, b.d.ValueCodec.AppendEncode(e, v))
	}
	slices.SortFunc(st.Elements, bytes.Compare)
	return st, nil
}

// readOnlyBroadcast hides a broadcast state's writes: no type assertion
// turns it back into a BroadcastState.
type readOnlyBroadcast[K comparable, V any] struct{ b *broadcast[K, V] }

func (r readOnlyBroadcast[K, V]) Get(k K) (V, bool)    { return r.b.Get(k) }
func (r readOnlyBroadcast[K, V]) Contains(k K) bool    { return r.b.Contains(k) }
func (r readOnlyBroadcast[K, V]) All() iter.Seq2[K, V] { return r.b.All() }

func broadcastMeta[K comparable, V any](d BroadcastDescriptor[K, V]) snapshot.StateMeta {
	return snapshot.StateMeta{Name: d.Name, Kind: snapshot.KindBroadcast,
		Codec:  codecID[K](d.KeyCodec) + " -> " + codecID[V](d.ValueCodec),
		Schema: schemaOf(d.ValueCodec), KeySchema: schemaOf(d.KeyCodec)}
}
