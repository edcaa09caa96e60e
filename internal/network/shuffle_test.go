package network

import "testing"

// TestReleaseKeepsLaterAttempts: releasing a job's attempt frees its
// partitions and earlier attempts', while a later attempt's, which may be
// wired already when the release arrives, keep their pools.
func TestReleaseKeepsLaterAttempts(t *testing.T) {
	s := NewLocalShuffle()
	b := NewBudget(1 << 20)
	produce := func(job string, attempt int) *BufferPool {
		p, err := b.NewPool(1, 1, 1024)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Produce(PartitionKey{Job: job, Attempt: attempt}, 1, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	produce("j", 0)
	produce("j", 1)
	next := produce("j", 2)
	other := produce("k", 0)
	s.Release("j", 1)
	if got := s.Pools("j"); len(got) != 1 || got[0] != next {
		t.Fatalf("after releasing attempt 1, job j has pools %v; want only attempt 2's", got)
	}
	if got := s.Pools("k"); len(got) != 1 || got[0] != other {
		t.Fatalf("another job's pools went: %v", got)
	}
	if _, err := next.Request(nil); err != nil {
		t.Fatalf("attempt 2's pool was closed: %v", err)
	}
}
