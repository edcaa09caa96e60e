package valuecopy

import (
	"testing"

	"github.com/weirhq/weir/codec"
)

type flat struct {
	A int64
	S string
	B [4]float64
}

type deep struct {
	N    int64
	Tags []string
}

func TestMutable(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"int64", Mutable[int64](), false},
		{"string", Mutable[string](), false},
		{"flat struct", Mutable[flat](), false},
		{"[0]*int", Mutable[[0]*int](), false},
		{"map", Mutable[map[string]bool](), true},
		{"slice", Mutable[[]int64](), true},
		{"pointer", Mutable[*flat](), true},
		{"struct with a slice", Mutable[deep](), true},
		{"array of maps", Mutable[[2]map[int]int](), true},
		{"interface", Mutable[any](), true},
	} {
		if tc.got != tc.want {
			t.Errorf("Mutable[%s] = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// A copy shares nothing with the original: changing it in place leaves
// the original as it was.
func TestFuncCopiesDeeply(t *testing.T) {
	if Func(codec.Int64()) != nil {
		t.Fatal("Func of int64 is not nil: a value type needs no copy")
	}
	c, err := codec.For[map[string]*deep]()
	if err != nil {
		t.Fatal(err)
	}
	cp := Func(c)
	orig := map[string]*deep{"a": {N: 1, Tags: []string{"x"}}}
	dup := cp(orig)
	dup["a"].N = 2
	dup["a"].Tags[0] = "y"
	dup["b"] = &deep{}
	if len(orig) != 1 || orig["a"].N != 1 || orig["a"].Tags[0] != "x" {
		t.Fatalf("the original changed with its copy: %+v", orig["a"])
	}
}
