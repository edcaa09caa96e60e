// Package shortkey owns keys of up to 16 bytes held as two machine words:
// loading them from bytes without a call or a store (Words), and Index, a
// table that numbers the distinct string keys of a batch-mode aggregation
// with short keys in its slots.
//
// Hash tables of short keys compare two words where a Go map keyed by
// string follows the key's pointer to its bytes: a second memory access
// per lookup, and the one that misses the cache when the keys are many.
// The heap state backend (internal/statebackend/typedstore) holds its short map
// keys this way; Index does the same for batch mode's reduce, which
// keeps one accumulator per key for the whole input.
package shortkey
