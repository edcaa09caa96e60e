package statebackend

import (
	"fmt"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/pebblekv"
	"github.com/weirhq/weir/state"
)

type pebbleKeyed struct {
	state.StoreBase
	cfg Config
	db  *pebblekv.DB
	reg registry

	mu       sync.Mutex      // guards prevSSTs: Materialize runs off the task goroutine
	prevSSTs map[string]bool // SST files of the last materialized native checkpoint
}

func newPebbleKeyed(cfg Config) (*pebbleKeyed, error) {
	dbDir := filepath.Join(cfg.Dir, "db")
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	// A working directory left by a previous attempt holds stale state: the
	// truth is in the snapshots we restore from.
	if err := os.RemoveAll(dbDir); err != nil {
		return nil, err
	}
	db, err := pebblekv.Open(dbDir, pebblekv.Options{
		CacheBytes: cfg.Pebble.CacheBytes, MemTableBytes: cfg.Pebble.MemTableBytes,
		WriteCacheBytes: cfg.Pebble.WriteCacheBytes,
	}, cfg.Range, cfg.MaxParallelism, cfg.Clock)
	if err != nil {
		return nil, err
	}
	return &pebbleKeyed{cfg: cfg, db: db}, nil
}

func (k *pebbleKeyed) KeyedState(meta snapshot.StateMeta, evolve snapshot.Evolve, create func(spi.Backend) (any, error)) any {
	return k.reg.get(meta, create, func(m snapshot.StateMeta) (spi.Backend, error) {
		t, err := k.db.Table(m, evolve)
		if err != nil {
			return nil, err
		}
		return serialized{t: t, now: k.db.Now}, nil
	})
}

// serialized is one Pebble state as the handles of package state use it.
type serialized struct {
	t   spi.KVTable
	now func() int64
}

func (s serialized) Now() int64         { return s.now() }
func (s serialized) Table() spi.KVTable { return s.t }

func (k *pebbleKeyed) SetCurrentKey(key []byte, kg int) { k.db.SetCurrentKey(key, kg) }
func (k *pebbleKeyed) SetCurrentNamespace(ns []byte)    { k.db.SetCurrentNamespace(ns) }
func (k *pebbleKeyed) ForEachKey(name string, fn func([]byte, int) error) error {
	return k.db.ForEachKey(name, fn)
}

func (k *pebbleKeyed) Close() error {
	err := k.db.Close()
	if rerr := os.RemoveAll(filepath.Join(k.cfg.Dir, "db")); err == nil {
		err = rerr
	}
	return err
}

func (k *pebbleKeyed) header(id int64) snapshot.Header {
	return snapshot.Header{MaxParallelism: k.cfg.MaxParallelism, Range: k.cfg.Range, CheckpointID: id}
}

func (k *pebbleKeyed) Snapshot(id int64, kind SnapshotKind) (Pending, error) {
	switch kind {
	case Canonical:
		view, err := k.db.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("statebackend: pebble snapshot %d: %w", id, err)
		}
		return &pebbleCanonical{h: k.header(id), view: view}, nil
	case Native:
		dir := filepath.Join(k.cfg.Dir, "checkpoints", fmt.Sprint(id))
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, err
		}
		if err := k.db.Checkpoint(dir); err != nil {
			return nil, fmt.Errorf("statebackend: pebble checkpoint %d: %w", id, err)
		}
		return &pebbleNative{k: k, h: k.header(id), dir: dir}, nil
	}
	return nil, fmt.Errorf("statebackend: unknown snapshot kind %d", kind)
}

func (k *pebbleKeyed) Restore(sources []Source) error {
	for _, src := range sources {
		var err error
		if src.Canonical != nil {
			if err = checkMaxParallelism(src.Canonical, k.cfg.MaxParallelism); err == nil {
				err = k.db.RestoreCanonical(src.Canonical)
			}
		} else {
			err = k.db.RestoreNative(src.NativeDir)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type pebbleCanonical struct {
	once sync.Once
	h    snapshot.Header
	view *pebblekv.View
}

func (p *pebbleCanonical) Materialize(w io.Writer, extra ...snapshot.Source) (Handle, error) {
	defer p.Release()
	n, err := snapshot.Write(w, p.h, append(p.view.Sources(), extra...))
	if err != nil {
		return Handle{}, err
	}
	return Handle{ID: p.h.CheckpointID, Kind: Canonical, MaxParallelism: p.h.MaxParallelism, Range: p.h.Range, Size: n}, nil
}

func (p *pebbleCanonical) Release() { p.once.Do(func() { p.view.Close() }) }

type pebbleNative struct {
	k   *pebbleKeyed
	h   snapshot.Header
	dir string
}

// Materialize lists the checkpoint's files and marks the SSTs that the
// previous materialized checkpoint also had (SST names are never reused
// within a DB, so an uploader may also dedupe by name).
func (p *pebbleNative) Materialize(io.Writer, ...snapshot.Source) (Handle, error) {
	files, err := pebblekv.ListCheckpoint(p.dir)
	if err != nil {
		return Handle{}, err
	}
	h := Handle{ID: p.h.CheckpointID, Kind: Native, MaxParallelism: p.h.MaxParallelism, Range: p.h.Range, Dir: p.dir}
	p.k.mu.Lock()
	defer p.k.mu.Unlock()
	cur := map[string]bool{}
	for _, f := range files {
		shared := f.SST && p.k.prevSSTs[f.Name]
		if f.SST {
			cur[f.Name] = true
		}
		h.Files = append(h.Files, File{Name: f.Name, Size: f.Size, Shared: shared})
		h.Size += f.Size
		if !shared {
			h.IncrementalSize += f.Size
		}
	}
	p.k.prevSSTs = cur
	return h, nil
}

// Release deletes the checkpoint directory.
func (p *pebbleNative) Release() { os.RemoveAll(p.dir) }
