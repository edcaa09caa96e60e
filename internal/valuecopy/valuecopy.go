// Package valuecopy owns the copies that let user code change state in
// place while a snapshot reads it: whether a value type can be changed
// through a copy of it at all (Mutable), and a copy deep enough that
// changing it leaves the original alone (Func). Package state uses them
// for the copy-on-write of the heap backend's entries, the window
// operators for the accumulators they hand to a user's Merge.
package valuecopy

import (
	"reflect"

	"github.com/weirhq/weir/codec"
)

// Mutable reports whether values of type V can be changed in place
// through a copy of them: V reaches memory through a map, slice, pointer,
// channel, function or interface (strings are immutable and do not count).
func Mutable[V any]() bool { return mutableType(reflect.TypeFor[V]()) }

func mutableType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer, reflect.UnsafePointer, reflect.Chan, reflect.Func, reflect.Interface:
		return true
	case reflect.Array:
		return t.Len() > 0 && mutableType(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if mutableType(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// Func returns a deep copy of values of V through c when V holds
// references (see Mutable), so that changing the copy in place leaves the
// original alone; nil when V holds none (assignment copies such a value)
// or c is nil. c must encode everything a value reaches: a codec that
// cannot decode its own encoding makes the copy panic.
func Func[V any](c codec.Codec[V]) func(V) V {
	if c == nil || !Mutable[V]() {
		return nil
	}
	return Through(c)
}

// Through copies a value by encoding and decoding it with c.
func Through[V any](c codec.Codec[V]) func(V) V {
	return func(v V) V {
		out, _, err := c.Decode(c.AppendEncode(nil, v))
		if err != nil {
			panic("state: codec cannot decode its own encoding: " + err.Error())
		}
		return out
	}
}
