package statebackend

import (
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"io"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
	"github.com/weirhq/weir/state"
)

// Backend kinds, named as Flink's state.backend.type values.
const (
	KindHashMap = "hashmap"
	KindPebble  = "pebble"
)

// Config selects and sizes a keyed backend for one subtask.
type Config struct {
	Kind           string // KindHashMap (default) or KindPebble
	Dir            string // Pebble working directory (created; deleted by Close)
	MaxParallelism int
	Range          keygroup.Range
	Clock          clock.Clock // processing time for TTL; default the system clock
	Pebble         PebbleOptions
	// HeapMemory bounds the hashmap backend's tables (nil: unbounded); the
	// stores of one TaskManager share it.
	HeapMemory *budget.Budget
}

// PebbleOptions bound the memory of the Pebble backend. Zero values take the defaults.
type PebbleOptions struct {
	CacheBytes    int64 // block cache, default 64 MiB
	MemTableBytes int64 // one memtable, default 16 MiB; at most 2 are kept (the Go heap holds them)
	// WriteCacheBytes bounds the write-back cache of value, reducing and
	// aggregating state in front of Pebble (default 8 MiB); a snapshot's
	// synchronous part writes back at most this much.
	WriteCacheBytes int64
}

// SnapshotKind says what a snapshot produces.
type SnapshotKind int

const (
	// Canonical is the backend-independent format of internal/snapshot,
	// used for savepoints, rescaling and switching backends.
	Canonical SnapshotKind = iota
	// Native is a Pebble checkpoint directory: incremental (only new SST
	// files need uploading). Pebble only.
	Native
)

// Keyed is a keyed state backend for one subtask.
type Keyed interface {
	state.KeyedStore
	spi.Store
	// SetCurrentKey sets the current key (encoded bytes, copied) and its key group.
	SetCurrentKey(key []byte, keyGroup int)
	// SetCurrentNamespace sets the current namespace (copied); empty is none.
	SetCurrentNamespace(ns []byte)
	// ForEachKey calls fn with every key (encoded, a copy) and its key
	// group that has an entry of the named state in no namespace, until fn
	// returns an error. fn may set the current key and change state.
	ForEachKey(state string, fn func(key []byte, keyGroup int) error) error
	// Snapshot starts snapshot id; the returned Pending finishes it off the task goroutine.
	Snapshot(id int64, kind SnapshotKind) (Pending, error)
	// Restore loads the key groups of this backend's range from the sources.
	Restore(sources []Source) error
	Close() error
}

// Pending is a started snapshot.
type Pending interface {
	// Materialize finishes the snapshot and may run on any goroutine,
	// concurrently with state access. Canonical: writes the snapshot, plus
	// the extra sources (the timer service's), to w. Native: w and extra are
	// unused (timers go to a separate canonical snapshot); the Handle lists the
	// checkpoint's files, and the checkpoint directory then belongs to the
	// caller (delete it after upload). Materialize releases the Pending.
	Materialize(w io.Writer, extra ...snapshot.Source) (Handle, error)
	// Release drops a snapshot that will not be materialized (Native:
	// deletes the checkpoint directory).
	Release()
}

// Handle describes a materialized snapshot.
type Handle struct {
	ID             int64
	Kind           SnapshotKind
	MaxParallelism int
	Range          keygroup.Range
	Size           int64 // bytes written (canonical) or total size of the files (native)

	// Native only.
	Dir             string // local checkpoint directory, owned by the caller (delete after upload)
	Files           []File
	IncrementalSize int64 // bytes of the files that are not Shared
}

// File is one file of a native checkpoint.
type File struct {
	Name   string // relative to Handle.Dir
	Size   int64
	Shared bool // an SST file that was also in the previous checkpoint: no upload needed
}

// Source is one snapshot to restore from: a canonical snapshot, or a native
// Pebble checkpoint directory.
type Source struct {
	Canonical *snapshot.Reader
	NativeDir string
}

// New builds the backend cfg.Kind names.
func New(cfg Config) (Keyed, error) {
	if cfg.MaxParallelism < 1 || cfg.MaxParallelism > keygroup.UpperBoundMaxParallelism {
		return nil, fmt.Errorf("statebackend: max parallelism %d out of range", cfg.MaxParallelism)
	}
	if cfg.Range.Len() == 0 || cfg.Range.Start < 0 || cfg.Range.End >= cfg.MaxParallelism {
		return nil, fmt.Errorf("statebackend: key-group range %v invalid for max parallelism %d", cfg.Range, cfg.MaxParallelism)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	switch cfg.Kind {
	case "", KindHashMap:
		return newHeapKeyed(cfg), nil
	case KindPebble:
		if cfg.Dir == "" {
			return nil, errors.New("statebackend: the pebble backend needs a working directory")
		}
		return newPebbleKeyed(cfg)
	}
	return nil, fmt.Errorf("statebackend: unknown backend kind %q (want %q or %q)", cfg.Kind, KindHashMap, KindPebble)
}

// registry maps state names to handles, shared by both backends.
type registry struct {
	states map[string]registered
}

type registered struct {
	meta   snapshot.StateMeta
	handle any
}

func (r *registry) get(meta snapshot.StateMeta, create func(spi.Backend) (any, error), backend func(snapshot.StateMeta) (spi.Backend, error)) any {
	if got, ok := r.states[meta.Name]; ok {
		if got.meta != meta {
			panic(fmt.Sprintf("state %q is registered as %s state (TTL %d ms, update %d), requested as %s state (TTL %d ms, update %d)",
				meta.Name, got.meta.Kind, got.meta.TTLMillis, got.meta.TTLUpdate, meta.Kind, meta.TTLMillis, meta.TTLUpdate))
		}
		return got.handle
	}
	b, err := backend(meta)
	if err == nil {
		var h any
		h, err = create(b)
		if err == nil {
			if r.states == nil {
				r.states = map[string]registered{}
			}
			r.states[meta.Name] = registered{meta: meta, handle: h}
			return h
		}
	}
	panic(&state.BackendError{State: meta.Name, Op: "register", Err: err})
}
