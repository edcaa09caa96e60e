package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// The operations a FaultFunc is asked about.
const (
	OpPut    = "put"    // Put
	OpWrite  = "write"  // NewWriter (an injected error is returned by Close), PutFile
	OpGet    = "get"    // Get, CopyVerified and GetFile
	OpOpen   = "open"   // Store.Open
	OpRead   = "read"   // each ReadAt of a ReaderAt
	OpDelete = "delete" // Delete
	OpList   = "list"   // List, and the directory listings of Completed and Latest
)

// Ops lists every operation a FaultFunc may be asked about.
var Ops = []string{OpPut, OpWrite, OpGet, OpOpen, OpRead, OpDelete, OpList}

// ErrInjected is wrapped by the errors Faults injects.
var ErrInjected = errors.New("injected fault")

// FaultFunc decides, per store call, a delay to apply before the call (which
// ends early with the context's error if the context is canceled) and an error
// to fail it with (nil to let it run). key is relative to the store's root
// (the prefix, for list). It is called from any goroutine that uses the store.
//
// An injected error leaves nothing behind: put fails before writing; write
// accepts the data and then fails at Close, aborting the upload.
type FaultFunc func(op, key string) (delay time.Duration, err error)

// WithFaults returns a view of s whose calls first consult f (after any
// FaultFunc s already has). The view shares s's bucket: closing s closes it,
// closing the view does nothing.
func WithFaults(s *Store, f FaultFunc) *Store {
	v := *s
	v.view = true
	if prev := s.fault; prev != nil {
		v.fault = func(op, key string) (time.Duration, error) {
			d1, err := prev(op, key)
			if err != nil {
				return d1, err
			}
			d2, err := f(op, key)
			return d1 + d2, err
		}
	} else {
		v.fault = f
	}
	return &v
}

// inject applies s's FaultFunc to op on key. err is the context's error if
// ctx ended during the delay; fault is the error the FaultFunc chose.
func (s *Store) inject(ctx context.Context, op, key string) (fault, err error) {
	if s.fault == nil {
		return nil, nil
	}
	delay, fault := s.fault(op, key)
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return fault, nil
}

// Faults is a FaultFunc driven by a seeded generator, for randomized tests:
//
//	f := &storage.Faults{Rand: testseed.Rand(t, 1), ErrorRate: 0.1, MaxDelay: time.Millisecond}
//	faulty := storage.WithFaults(store, f.Func())
//
// It is safe for concurrent use; the sequence of decisions is reproducible
// from the seed when the calls come in a deterministic order.
type Faults struct {
	Rand      *rand.Rand    // the decisions' source; required
	ErrorRate float64       // probability that a call fails with ErrInjected
	MaxDelay  time.Duration // each call is delayed uniformly in [0, MaxDelay)
	Ops       []string      // the ops subject to faults; all when empty

	mu       sync.Mutex     // guards Rand and injected
	injected map[string]int // failures injected, per op
}

// Func returns the FaultFunc of f.
func (f *Faults) Func() FaultFunc {
	return func(op, key string) (time.Duration, error) {
		if len(f.Ops) > 0 && !slices.Contains(f.Ops, op) {
			return 0, nil
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var delay time.Duration
		if f.MaxDelay > 0 {
			delay = time.Duration(f.Rand.Int64N(int64(f.MaxDelay)))
		}
		if f.Rand.Float64() >= f.ErrorRate {
			return delay, nil
		}
		if f.injected == nil {
			f.injected = make(map[string]int)
		}
		f.injected[op]++
		return delay, fmt.Errorf("%w: %s %q", ErrInjected, op, key)
	}
}

// Injected returns how many failures f injected into op, or into all ops if
// op is "".
func (f *Faults) Injected(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op != "" {
		return f.injected[op]
	}
	n := 0
	for _, c := range f.injected {
		n += c
	}
	return n
}
