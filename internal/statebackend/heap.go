package statebackend

import (
	"errors"
	"github.com/weirhq/weir/internal/statebackend/spi"
	"io"
	"sync"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/typedstore"
	"github.com/weirhq/weir/state"
)

type heapKeyed struct {
	state.StoreBase
	cfg Config
	s   *typedstore.Store
	reg registry
}

func newHeapKeyed(cfg Config) *heapKeyed {
	s := typedstore.NewStore(cfg.Range, cfg.MaxParallelism, cfg.Clock)
	s.UseMemory(cfg.HeapMemory)
	return &heapKeyed{cfg: cfg, s: s}
}

func (k *heapKeyed) KeyedState(meta snapshot.StateMeta, evolve snapshot.Evolve, create func(spi.Backend) (any, error)) any {
	return k.reg.get(meta, create, func(snapshot.StateMeta) (spi.Backend, error) {
		k.s.SetEvolve(meta.Name, evolve) // the table's attach migrates restored entries with it
		return k.s, nil                  // the store offers its typed tables
	})
}

func (k *heapKeyed) SetCurrentKey(key []byte, kg int) { k.s.SetCurrentKey(key, kg) }

// TypedStore implements spi.DirectStore.
func (k *heapKeyed) TypedStore() *typedstore.Store { return k.s }

var _ spi.DirectStore = (*heapKeyed)(nil)

func (k *heapKeyed) SetCurrentNamespace(ns []byte) { k.s.SetCurrentNamespace(ns) }
func (k *heapKeyed) ForEachKey(name string, fn func([]byte, int) error) error {
	return k.s.ForEachKey(name, fn)
}

// Close gives the tables' memory back to the TaskManager's budget.
func (k *heapKeyed) Close() error { k.s.Release(); return nil }

func (k *heapKeyed) Snapshot(id int64, kind SnapshotKind) (Pending, error) {
	if kind != Canonical {
		return nil, errors.New("statebackend: the hashmap backend only takes canonical snapshots")
	}
	sources, release := k.s.Freeze()
	return &heapPending{
		h:       snapshot.Header{MaxParallelism: k.cfg.MaxParallelism, Range: k.cfg.Range, CheckpointID: id},
		sources: sources, release: release,
	}, nil
}

func (k *heapKeyed) Restore(sources []Source) error {
	for _, src := range sources {
		if src.Canonical == nil {
			return errors.New("statebackend: the hashmap backend restores only canonical snapshots")
		}
		if err := checkMaxParallelism(src.Canonical, k.cfg.MaxParallelism); err != nil {
			return err
		}
		if err := k.s.Restore(src.Canonical); err != nil {
			return err
		}
	}
	return nil
}

type heapPending struct {
	once    sync.Once
	h       snapshot.Header
	sources []snapshot.Source
	release func() // gives back what the snapshot held (typedstore.Store.Freeze)
}

func (p *heapPending) Materialize(w io.Writer, extra ...snapshot.Source) (Handle, error) {
	n, err := snapshot.Write(w, p.h, append(p.sources[:len(p.sources):len(p.sources)], extra...))
	p.Release()
	if err != nil {
		return Handle{}, err
	}
	return Handle{ID: p.h.CheckpointID, Kind: Canonical, MaxParallelism: p.h.MaxParallelism, Range: p.h.Range, Size: n}, nil
}

// Release drops the frozen maps and gives back to the heap state's Memory
// what they held; later writes still copy once per key group (the version
// says shared), which is harmless.
func (p *heapPending) Release() { p.once.Do(func() { p.sources = nil; p.release() }) }
