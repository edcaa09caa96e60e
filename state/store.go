package state

import (
	"fmt"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/heap"
)

// KeyedStore is a keyed state backend, implemented in internal/statebackend
// and handed to user functions by the task runtime. User code only passes it
// to the Get*State functions.
type KeyedStore interface {
	// KeyedState returns the handle registered under meta.Name, calling
	// create on first use. It panics if the name is registered with another
	// kind, and with a *BackendError if the backend fails.
	KeyedState(meta snapshot.StateMeta, create func(Backend) (any, error)) any
}

// Backend is what a backend offers to the handle constructors of this
// package: exactly one of Heap and KV is set.
type Backend struct {
	Heap *heap.Store // typed in-memory tables
	KV   KVTable     // a serialized table of one state (Pebble)
	Now  func() int64
}

// KVTable is one state in a serialized (byte-oriented) backend. Every call
// addresses the current key and namespace of the backend. Returned slices are
// valid until the next call on the table. Timestamps are TTL timestamps,
// stored only when the state has TTL.
type KVTable interface {
	// Get reads the value (userKey nil) or map entry (userKey non-nil).
	Get(userKey []byte) (value []byte, ts int64, ok bool, err error)
	Set(userKey, value []byte, ts int64) error
	Delete(userKey []byte) error
	// DeleteAll removes every map entry of the current key and namespace.
	DeleteAll() error
	// Scan calls fn for the map entries of the current key and namespace,
	// in user-key byte order, until fn returns false.
	Scan(fn func(userKey, value []byte, ts int64) bool) error
	// Append adds a list element without reading the list.
	Append(elem []byte, ts int64) error
	// SetList replaces the list (empty: delete).
	SetList(elems [][]byte, ts []int64) error
	// ScanList calls fn for each list element in order until fn returns false.
	ScanList(fn func(elem []byte, ts int64) bool) error
}

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
func register[H any](s KeyedStore, meta snapshot.StateMeta, create func(Backend) (H, error)) H {
	h := s.KeyedState(meta, func(b Backend) (any, error) { return create(b) })
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
