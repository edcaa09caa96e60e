package state

import "iter"

// ValueState is one value per key (and namespace).
type ValueState[V any] interface {
	// Value returns the current key's value, and false if there is none.
	Value() (V, bool)
	Update(v V)
	Clear()
}

// ListState is a list per key (and namespace).
type ListState[V any] interface {
	// Get returns a copy of the list (nil when empty).
	Get() []V
	Add(v V)
	AddAll(vs []V)
	// Update replaces the list; an empty list clears it.
	Update(vs []V)
	Clear()
}

// MapState is a map per key (and namespace).
type MapState[UK comparable, UV any] interface {
	Get(k UK) (UV, bool)
	Put(k UK, v UV)
	Remove(k UK)
	Contains(k UK) bool
	// All yields the entries; the order is backend-specific.
	All() iter.Seq2[UK, UV]
	Keys() iter.Seq[UK]
	IsEmpty() bool
	Clear()
}

// ReducingState folds added values into one with the descriptor's Reduce.
type ReducingState[V any] interface {
	Get() (V, bool)
	Add(v V)
	Clear()
}

// AggregatingState folds added inputs into an accumulator with the
// descriptor's Add, and reads it through Result.
type AggregatingState[IN, OUT any] interface {
	Get() (OUT, bool)
	Add(in IN)
	Clear()
}
