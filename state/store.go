package state

import (
	"fmt"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/spi"
)

// KeyedStore is an operator's keyed state, handed to user functions by the
// runtime (KeyedRuntimeContext.State). User code only passes it to the
// Get*State functions; only Weir's state backends implement it.
type KeyedStore interface {
	keyedStore()
}

// StoreBase makes a state backend a KeyedStore; Weir's backends embed it.
// Embedding it elsewhere gives a KeyedStore that the Get*State functions
// refuse.
type StoreBase struct{}

func (StoreBase) keyedStore() {}

// BackendError is the panic value of a state call whose backend failed. The
// task runtime recovers it and fails the task with it.
type BackendError struct {
	State string // state name
	Op    string // "get", "put", "snapshot", ...
	Err   error
}

func (e *BackendError) Error() string {
	return fmt.Sprintf("state %q: backend %s failed: %v", e.State, e.Op, e.Err)
}

func (e *BackendError) Unwrap() error { return e.Err }

func fail(name, op string, err error) {
	panic(&BackendError{State: name, Op: op, Err: err})
}

// register looks the state up in s, creating it with create, and checks its type.
func register[H any](s KeyedStore, meta snapshot.StateMeta, evolve snapshot.Evolve, create func(spi.Backend) (H, error)) H {
	st, ok := s.(spi.Store)
	if !ok {
		panic(fmt.Sprintf("state %q: %T is not a keyed state backend (use the KeyedStore the runtime gives)", meta.Name, s))
	}
	h := st.KeyedState(meta, evolve, func(b spi.Backend) (any, error) { return create(b) })
	typed, ok := h.(H)
	if !ok {
		panic(fmt.Sprintf("state %q is registered as %T, requested as %T (same name, different type)", meta.Name, h, *new(H)))
	}
	return typed
}

// serialized returns the table of a backend that keeps states as bytes
// (spi.Serialized), or an error naming a backend that offers no table this
// package can use.
func serialized(b spi.Backend) (spi.KVTable, error) {
	s, ok := b.(spi.Serialized)
	if !ok {
		return nil, fmt.Errorf("keyed state backend %T keeps its states in neither a heap table nor a serialized table (spi.Serialized)", b)
	}
	return s.Table(), nil
}

// ttlPolicy is the TTL logic shared by all handles.
type ttlPolicy struct {
	ttl    int64 // ms; 0: no TTL
	onRead bool
	now    func() int64
}

func newTTL(m snapshot.StateMeta, now func() int64) ttlPolicy {
	return ttlPolicy{ttl: m.TTLMillis, onRead: m.TTLUpdate == snapshot.TTLOnReadAndWrite, now: now}
}

func (p ttlPolicy) expired(ts, now int64) bool { return p.ttl > 0 && ts+p.ttl <= now }

// clock returns the current time, or 0 without TTL (no clock read on the hot path).
func (p ttlPolicy) clock() int64 {
	if p.ttl == 0 {
		return 0
	}
	return p.now()
}
