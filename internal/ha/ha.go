package ha

import (
	"context"
	"errors"
)

// ErrNotLeader is returned by a Store write of a term that no longer holds
// (or may not): the caller must stop acting as the leader.
var ErrNotLeader = errors.New("not the leader (its term of leadership has ended)")

// ErrNotFound is returned by Store.Get for a key without a value.
var ErrNotFound = errors.New("no such key in the HA store")

// Service is one contender's connection to the election and store of one
// cluster id.
type Service interface {
	// Campaign blocks until this contender leads or ctx ends; the
	// Leadership publishes info as the leader's, readable by Leader.
	Campaign(ctx context.Context, info LeaderInfo) (Leadership, error)
	// Leader tells who leads now (ok false: nobody does).
	Leader(ctx context.Context) (info LeaderInfo, epoch uint64, ok bool, err error)
	// Reader reads the store without leading (a standby's view; it may be
	// stale by the time it is used).
	Reader() Reader
	// Close ends any campaign and term of this contender (resigning what it
	// leads) and releases the connection.
	Close() error
}

// LeaderInfo is what a leader publishes: where its control plane and REST
// API listen.
type LeaderInfo struct {
	RPCAddress  string `json:"rpc"`
	RESTAddress string `json:"rest"`
}

// Leadership is a won term.
type Leadership interface {
	// Epoch is the term's fencing token (see the package's invariants).
	Epoch() uint64
	// Done is closed when the term has ended or may end before this leader
	// could act again: it was not renewed within the renew deadline, it was
	// resigned, or the service said it is lost.
	Done() <-chan struct{}
	// Store is the term's view of the store: its writes are fenced by the
	// term.
	Store() Store
	// Resign ends the term at once, so another contender need not wait for
	// the lease to expire.
	Resign(ctx context.Context) error
}

// Reader reads the store.
type Reader interface {
	// Get returns the value of key, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns every key under prefix (keys as given to Put) and its value.
	List(ctx context.Context, prefix string) (map[string][]byte, error)
}

// Store is a leader's view of the store. Keys are slash-separated paths of
// letters, digits and "-_." (at most 200 bytes); values are small (at most
// MaxValueSize). Every write fails with ErrNotLeader once the term is over.
type Store interface {
	Reader
	// Put sets key to value.
	Put(ctx context.Context, key string, value []byte) error
	// Delete removes key (no error if it has no value).
	Delete(ctx context.Context, key string) error
	// Increment adds one to the decimal counter at key (absent: 0) and
	// returns the new value, atomically within the term.
	Increment(ctx context.Context, key string) (int64, error)
}

// MaxValueSize bounds a store value: the store holds pointers and
// descriptions, never state (a Kubernetes ConfigMap holds at most 1 MiB in
// all).
const MaxValueSize = 64 << 10
