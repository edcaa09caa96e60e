// Package datagen provides sources that make records instead of reading them:
// a number sequence, a generator function of the record index with an
// optional rate limit, and a slice. Index ranges are split evenly among the
// source's subtasks, so the union of all subtasks' output is the same at any
// parallelism.
package datagen
