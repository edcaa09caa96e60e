package testseed

import (
	"math"
	"math/rand/v2"
	"reflect"
)

// Fill sets v (settable) to a random value drawn from r, for round trips
// of messages: nil, empty and full slices and pointers, extreme and small
// integers, strings of any bytes, through structs field by field. A kind
// it has no values for (maps, floats, interfaces...) panics naming the
// type, so a message that gains one fails its test until Fill learns it.
func Fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			Fill(r, v.Field(i))
		}
	case reflect.Pointer:
		if r.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			Fill(r, v.Elem())
		} else {
			v.SetZero()
		}
	case reflect.Slice:
		switch r.IntN(4) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, r.IntN(2)))
		default:
			n := 1 + r.IntN(4)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				Fill(r, v.Index(i))
			}
		}
	case reflect.String:
		b := make([]byte, r.IntN(4)*r.IntN(6))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		v.SetString(string(b))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Uint64:
		v.SetUint([]uint64{0, 1, math.MaxUint64, r.Uint64()}[r.IntN(4)])
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, -1, 1, math.MaxInt64, math.MinInt64, r.Int64N(1000) - 500, int64(r.Uint64())}[r.IntN(7)])
	case reflect.Uint8, reflect.Uint32:
		v.SetUint(r.Uint64() & (1<<(8*v.Type().Size()) - 1))
	default:
		panic("testseed.Fill: no random values for " + v.Type().String())
	}
}
