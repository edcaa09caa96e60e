// Package datagen provides sources that make records instead of reading them:
// a number sequence, a generator function of the record index with an
// optional rate limit, and a slice.
//
// Each implements source.Source with Split as its split: at the first start
// the enumerator makes one split per reader subtask and assigns it when that
// subtask registers, then tells it that no more will come. Bounded sources
// cut their indexes into contiguous ranges, so the union of all subtasks'
// output is the same at any parallelism; a split carries the next index to
// emit, so a reader restored from a checkpoint goes on exactly there, and
// after a restore at another parallelism the splits are redistributed
// (those the enumerator still holds go to subtask j mod p for split j) and
// every index is still emitted exactly once. The unbounded generator strides
// its indexes by the parallelism, so it can only be restored at the
// parallelism it started with; otherwise the restore fails and says so.
//
// A rate limit is the whole source's: each split takes an equal share, and
// keeps it when splits move to other readers after a restore.
package datagen
