package tuple

// T2 is a pair of values.
type T2[A, B any] struct {
	F0 A
	F1 B
}

// T3 is a triple of values.
type T3[A, B, C any] struct {
	F0 A
	F1 B
	F2 C
}

// Of2 returns the pair (a, b); it exists so that call sites can rely on type
// inference instead of spelling out T2's type arguments.
func Of2[A, B any](a A, b B) T2[A, B] { return T2[A, B]{F0: a, F1: b} }

// Of3 returns the triple (a, b, c).
func Of3[A, B, C any](a A, b B, c C) T3[A, B, C] { return T3[A, B, C]{F0: a, F1: b, F2: c} }
