package typedstore

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// valueChunk is how much a store takes from its Memory at a time for
// what values point to.
const valueChunk = budget.Chunk

// UseMemory makes the store's tables take their memory from m (nil: no
// bound). Call it before any table is created.
func (s *Store) UseMemory(m *budget.Budget) { s.mem = m }

// Release gives back what the store's tables and values took from its
// Memory; the store is not used afterwards. What a snapshot still holds
// is given back when that snapshot is released.
func (s *Store) Release() {
	if s.mem != nil {
		s.mem.Give(s.memTaken)
		s.memTaken, s.memUsed = 0, 0
	}
}

// tableBytes is what a table of size slots of entry type E takes: the
// slots and a control byte each.
func tableBytes[E any](size int) int64 {
	return int64(size) * int64(unsafe.Sizeof(slot[E]{})+1)
}

// grow takes n more bytes from the store's Memory for a table of state
// about to grow (n <= 0: nothing).
func (s *Store) grow(state string, n int64) {
	if s.mem == nil || n <= 0 {
		return
	}
	s.mem.Take(n, state, budget.WhatTable)
	s.memTaken += n
	s.memUsed += n
}

// shrink gives back n bytes a table or value no longer takes.
func (s *Store) shrink(n int64) {
	if s.mem == nil || n <= 0 {
		return
	}
	s.memUsed -= n
	if spare := s.memTaken - s.memUsed; spare > 2*valueChunk {
		back := spare - valueChunk
		s.mem.Give(back)
		s.memTaken -= back
	}
}

// growValues takes n more bytes for what the values of state point to:
// from what the store took ahead, else from the Memory with a chunk more
// (or exactly n, if the chunk does not fit).
func (s *Store) growValues(state string, n int64) {
	if s.mem == nil || n <= 0 {
		return
	}
	if need := s.memUsed + n - s.memTaken; need > 0 {
		if s.mem.TryTake(need + valueChunk) {
			need += valueChunk
		} else {
			s.mem.Take(need, state, budget.WhatValues)
		}
		s.memTaken += need
	}
	s.memUsed += n
}

// frozen is a snapshot the store took with Freeze: what it still holds of
// what the task has copied away since.
type frozen struct {
	ver uint64 // the store's snapshot version the snapshot made current
	mem *budget.Budget
	// held is the bytes this snapshot holds that the task no longer
	// does, or below zero once the snapshot is released. The task
	// goroutine adds; Release, on any goroutine, swaps.
	held atomic.Int64
}

// add takes n bytes from the Memory for the snapshot (panicking with a
// *budget.Error if they do not fit) and says whether it is still held;
// if not, nothing is taken.
func (f *frozen) add(n int64, state string) bool {
	if f.held.Load() < 0 {
		return false
	}
	f.mem.Take(n, state, budget.WhatHeld)
	for {
		h := f.held.Load()
		if h < 0 {
			f.mem.Give(n)
			return false
		}
		if f.held.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

func (f *frozen) release() {
	if h := f.held.Swap(math.MinInt64); h > 0 {
		f.mem.Give(h)
	}
}

// hold counts n bytes the task copied away from (or dropped) that a
// snapshot taken after version ver still holds: the newest such snapshot
// not yet released holds them until it is. None: the bytes are garbage,
// and nothing is counted.
func (s *Store) hold(ver uint64, n int64, state string) {
	if n <= 0 {
		return
	}
	for i := len(s.frozen) - 1; i >= 0 && s.frozen[i].ver > ver; i-- {
		if s.frozen[i].add(n, state) {
			return
		}
	}
}

// Freeze is Snapshot, and counts what the snapshot holds of what the task
// copies away afterwards (a page of slots, control words, a value cloned
// before a write or deleted) until release is called, on any goroutine,
// once or more: the snapshot's sources are not read afterwards.
func (s *Store) Freeze() (sources []snapshot.Source, release func()) {
	sources = s.Snapshot()
	if s.mem == nil {
		return sources, func() {}
	}
	live := s.frozen[:0]
	for _, f := range s.frozen {
		if f.held.Load() >= 0 {
			live = append(live, f)
		}
	}
	clear(s.frozen[len(live):])
	f := &frozen{ver: s.snapVer, mem: s.mem}
	s.frozen = append(live, f)
	return sources, f.release
}
