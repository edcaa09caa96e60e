package state

import (
	"fmt"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statespi"
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
func register[H any](s KeyedStore, meta snapshot.StateMeta, evolve snapshot.Evolve, create func(statespi.Backend) (H, error)) H {
	spi, ok := s.(statespi.Store)
	if !ok {
		panic(fmt.Sprintf("state %q: %T is not a keyed state backend (use the KeyedStore the runtime gives)", meta.Name, s))
	}
	h := spi.KeyedState(meta, evolve, func(b statespi.Backend) (any, error) { return create(b) })
	typed, ok := h.(H)
	if !ok {
		panic(fmt.Sprintf("state %q is registered as %T, requested as %T (same name, different type)", meta.Name, h, *new(H)))
	}
	return typed
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
