// Package keygroup maps keys to key groups and key groups to subtasks.
//
// It owns the arithmetic that makes rescaling possible: a key hashes to one of
// maxParallelism key groups, and each of the parallelism subtasks of an operator
// owns one contiguous range of key groups. State moves between subtasks in whole
// key groups. The functions are pure and match Flink's KeyGroupRangeAssignment,
// so the same key hash lands in the same key group as it would in Flink.
package keygroup
