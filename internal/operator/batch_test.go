package operator

import "testing"

func TestPointerFree(t *testing.T) {
	type pair struct{ A, B int64 }
	type withString struct {
		A int64
		S string
	}
	for name, got := range map[string]bool{
		"int64": PointerFree[int64](), "pair": PointerFree[pair](), "array": PointerFree[[4]pair](),
		"string": !PointerFree[string](), "slice": !PointerFree[[]int64](), "withString": !PointerFree[withString](),
		"pointer": !PointerFree[*int64](), "any": !PointerFree[any](), "map": !PointerFree[map[int]int](),
	} {
		if !got {
			t.Errorf("%s: wrong answer", name)
		}
	}
}
