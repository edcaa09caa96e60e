package network

import "sync"

// PartitionKey names one producer subtask's result partition on one edge.
type PartitionKey struct {
	Job      string
	Edge     int
	Producer int
	Attempt  int
}

// LocalShuffle is the in-process transport's registry of result partitions.
// Producer and consumer tasks may be deployed in either order, so the first
// to ask for a partition creates it and the other finds it.
type LocalShuffle struct {
	mu    sync.Mutex // guards parts
	parts map[PartitionKey]*ResultPartition
}

// NewLocalShuffle returns an empty registry.
func NewLocalShuffle() *LocalShuffle {
	return &LocalShuffle{parts: map[PartitionKey]*ResultPartition{}}
}

// Partition returns the result partition for key, creating it with n
// subpartitions and a pool of poolSize buffers of bufferSize bytes.
func (s *LocalShuffle) Partition(key PartitionKey, n, poolSize, bufferSize int) *ResultPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, ok := s.parts[key]; ok {
		return rp
	}
	rp := NewResultPartition(n, NewBufferPool(poolSize, bufferSize))
	s.parts[key] = rp
	return rp
}

// Release forgets every partition of a job.
func (s *LocalShuffle) Release(job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.parts {
		if k.Job == job {
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
		if k.Job == job {
			out = append(out, rp.Pool)
		}
	}
	return out
}
