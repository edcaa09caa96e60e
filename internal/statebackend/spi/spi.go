package spi

import (
	"github.com/weirhq/weir/internal/snapshot"
)

// Store is what every keyed state backend implements (besides embedding
// state.StoreBase, which makes it a state.KeyedStore).
type Store interface {
	// KeyedState returns the handle registered under meta.Name, calling
	// create on first use. It panics if the name is registered with another
	// kind, and with a *state.BackendError if the backend fails. Restored
	// state of the name whose metadata differs from meta is attached
	// through snapshot.Resolve with evolve (nil: codec identity check only),
	// migrating its bytes once if evolve says so.
	KeyedState(meta snapshot.StateMeta, evolve snapshot.Evolve, create func(Backend) (any, error)) any
}

// Backend is one state's backend as the handle constructors of package
// state see it. Every backend implements it, plus one capability that
// says where the state's entries are kept: Serialized, or typed tables
// (the Backend is then a *typedstore.Store). The constructors check the
// capability once, when the state is created.
type Backend interface {
	// Now is the backend clock's processing time in milliseconds, the
	// clock of TTL.
	Now() int64
}

// Serialized is the capability of a backend that keeps each state as
// bytes: its handles encode and decode every value through the state's
// codecs.
type Serialized interface {
	Backend
	// Table is the state's table; the same one on every call.
	Table() KVTable
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
