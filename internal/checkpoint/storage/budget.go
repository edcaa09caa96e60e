package storage

import (
	"context"
	"fmt"
	"sync"
)

// blobWriteBuffer is the bytes a writer of a bucket store (s3, mem)
// buffers before it sends them: S3's smallest multipart part, set
// explicitly (writeOptions) so that a writer's memory is known.
const blobWriteBuffer = 5 << 20

// WriterMemory is the memory one open writer of s buffers: two aligned
// buffers of a file store's write-behind, or one part of a bucket's
// upload. LimitWriteMemory counts writers in these units.
func (s *Store) WriterMemory() int64 {
	if s.dir != "" {
		return 2 * fileWriteBuffer
	}
	return blobWriteBuffer
}

// LimitWriteMemory bounds the memory of s's open writes (NewWriter,
// PutFile, and Put to a bucket) to n bytes, counting WriterMemory for
// each: a write that would pass the bound waits until another one ends
// (or its context does). The bound is shared by every copy of s
// (WithFaults). n must be at least one writer's memory, else nothing
// could ever be written; 0 removes the bound.
func (s *Store) LimitWriteMemory(n int64) error {
	if n != 0 && n < s.WriterMemory() {
		return fmt.Errorf("storage: %s: a write memory of %d bytes is less than one writer's buffers (%d bytes)", s.url, n, s.WriterMemory())
	}
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	s.budget.limit = n
	s.budget.grant()
	return nil
}

// ShareWriteMemory puts s under the same bound of write memory as other
// (a job's savepoint folder under its checkpoint storage's).
func (s *Store) ShareWriteMemory(other *Store) { s.budget = other.budget }

// writeBudget is a store's bound on the memory of its open writes: a
// semaphore of bytes, granted first come first served (every writer of a
// store takes the same amount, so nobody is passed over).
type writeBudget struct {
	mu      sync.Mutex
	limit   int64 // 0: no bound
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n       int64
	granted chan struct{}
}

// acquire takes n bytes of the budget, waiting while they are not free.
func (b *writeBudget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if b.limit != 0 && n > b.limit {
		// A shared bound set for smaller writers: waiting would be for ever.
		limit := b.limit
		b.mu.Unlock()
		return fmt.Errorf("a writer needs %d bytes of buffers, more than the bound of the write memory (%d bytes)", n, limit)
	}
	if len(b.waiters) == 0 && b.fits(n) {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, granted: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.granted: // granted while the context ended: give it back
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant()
	return context.Cause(ctx)
}

// release returns n bytes taken by acquire.
func (b *writeBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.grant()
}

func (b *writeBudget) fits(n int64) bool { return b.limit == 0 || b.used+n <= b.limit }

// grant hands free bytes to the waiters in their order; b.mu is held.
func (b *writeBudget) grant() {
	for len(b.waiters) > 0 && b.fits(b.waiters[0].n) {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.granted)
	}
}
