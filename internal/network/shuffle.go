package network

import (
	"fmt"
	"sync"
)

// PartitionKey names one producer subtask's result partition on one edge.
type PartitionKey struct {
	Job      string
	Edge     int
	Producer int
	Attempt  int
}

// LocalShuffle is the in-process transport's registry of result partitions.
// Producer and consumer tasks may be deployed in either order, so the first
// to ask for a partition creates it and the other finds it. Only the
// producer gives it a buffer pool (from its TaskManager's budget).
type LocalShuffle struct {
	mu    sync.Mutex // guards parts and the Pool of every partition in it
	parts map[PartitionKey]*ResultPartition
}

// NewLocalShuffle returns an empty registry.
func NewLocalShuffle() *LocalShuffle {
	return &LocalShuffle{parts: map[PartitionKey]*ResultPartition{}}
}

func (s *LocalShuffle) partitionLocked(key PartitionKey, n int) (*ResultPartition, error) {
	rp, ok := s.parts[key]
	if !ok {
		rp = NewResultPartition(n, nil)
		s.parts[key] = rp
	} else if len(rp.Subs) != n {
		return nil, fmt.Errorf("network: partition %+v has %d subpartitions, asked for %d", key, len(rp.Subs), n)
	}
	return rp, nil
}

// Consume returns the result partition for key, creating it with n
// subpartitions if the producer has not yet.
func (s *LocalShuffle) Consume(key PartitionKey, n int) (*ResultPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.partitionLocked(key, n)
}

// Produce returns the result partition for key with pool as its buffer pool.
func (s *LocalShuffle) Produce(key PartitionKey, n int, pool *BufferPool) (*ResultPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.partitionLocked(key, n)
	if err != nil {
		return nil, err
	}
	if rp.Pool != nil {
		return nil, fmt.Errorf("network: partition %+v already has a producer", key)
	}
	rp.Pool = pool
	return rp, nil
}

// Release forgets the partitions of a job's attempts up to attempt and
// gives their pools' memory back to their budgets. A later attempt's stay:
// its tasks may already run (TaskManagers sharing the shuffle get the
// release and the next attempt's deployments in no common order).
func (s *LocalShuffle) Release(job string, attempt int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, rp := range s.parts {
		if k.Job == job && k.Attempt <= attempt {
			if rp.Pool != nil {
				rp.Pool.Close()
			}
			delete(s.parts, k)
		}
	}
}

// Pools returns the pools of a job's partitions, for memory accounting.
func (s *LocalShuffle) Pools(job string) []*BufferPool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*BufferPool
	for k, rp := range s.parts {
		if k.Job == job && rp.Pool != nil {
			out = append(out, rp.Pool)
		}
	}
	return out
}
