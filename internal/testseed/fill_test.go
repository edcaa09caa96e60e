package testseed

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

type inner struct {
	N uint32
	B byte
}

type sample struct {
	I     int64
	U     uint64
	S     string
	OK    bool
	P     *inner
	List  []inner
	Bytes []byte
}

// TestFill: over many draws Fill gives every shape a round trip must
// survive (nil, empty and full slices, nil and set pointers, extreme
// integers, strings that are not UTF-8), the same values for the same
// seed, and a panic naming a type it has no values for.
func TestFill(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for range 500 {
		var s sample
		Fill(r, reflect.ValueOf(&s).Elem())
		seen["nil slice"] = seen["nil slice"] || s.List == nil
		seen["empty slice"] = seen["empty slice"] || (s.List != nil && len(s.List) == 0)
		seen["full slice"] = seen["full slice"] || len(s.List) > 1
		seen["nil pointer"] = seen["nil pointer"] || s.P == nil
		seen["pointer"] = seen["pointer"] || s.P != nil
		seen["min int"] = seen["min int"] || s.I == math.MinInt64
		seen["max uint"] = seen["max uint"] || s.U == math.MaxUint64
		seen["not UTF-8"] = seen["not UTF-8"] || !utf8.ValidString(s.S)
		seen["true"] = seen["true"] || s.OK
		seen["big uint32"] = seen["big uint32"] || (s.P != nil && s.P.N > math.MaxUint16)
	}
	for _, k := range []string{"nil slice", "empty slice", "full slice", "nil pointer", "pointer", "min int", "max uint", "not UTF-8", "true", "big uint32"} {
		if !seen[k] {
			t.Errorf("500 draws gave no %s", k)
		}
	}
	var a, b sample
	Fill(rand.New(rand.NewPCG(7, 7)), reflect.ValueOf(&a).Elem())
	Fill(rand.New(rand.NewPCG(7, 7)), reflect.ValueOf(&b).Elem())
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave %+v and %+v", a, b)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "map[string]int") {
			t.Errorf("Fill of a map: panic %v, want one naming map[string]int", p)
		}
	}()
	var m map[string]int
	Fill(r, reflect.ValueOf(&m).Elem())
}
