package codec

import (
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// For returns a codec for T, derived from T's type on first use and cached.
//
// Supported: bool, the sized and unsized integers, float32, float64, string,
// time.Time, time.Duration, named types over any of these, and structs
// (exported fields in order; blank "_" fields are skipped), arrays, slices,
// maps and pointers built from them. The wire format is the one the
// hand-written codecs use, so For[int64] and Int64 (or a struct and the
// concatenation of its fields' codecs) agree byte for byte. Channels,
// functions, interfaces, complex numbers, uintptr, unsafe pointers,
// unexported fields and recursive types are errors naming the offending path.
//
// When T is a built-in type For returns the hand-written codec. When T's
// memory is its encoding (numbers and structs or arrays of them with no
// padding, on a little-endian machine) the codec is a single copy. Otherwise
// T is compiled once into a tree of closures over unsafe.Pointer with
// precomputed field offsets, so a record costs no reflection, except for
// maps nested inside T, whose entries go through package reflect: prefer
// Map for hot map-valued records.
func For[T any]() (Codec[T], error) {
	if c := builtin[T](); c != nil {
		return c, nil
	}
	t := reflect.TypeFor[T]()
	if e, ok := derivedCache.Load(t); ok {
		return e.(cached[T]).get()
	}
	n, err := compileType(t)
	e := cached[T]{err: err}
	if err == nil {
		if n.raw {
			e.codec = rawCodec[T]{}
		} else {
			e.codec = &derived[T]{n: n}
		}
	}
	actual, _ := derivedCache.LoadOrStore(t, e)
	return actual.(cached[T]).get()
}

// MustFor is For for types known to be supported; it panics otherwise, so use
// it in package-level variables and job setup, not on untrusted types.
func MustFor[T any]() Codec[T] {
	c, err := For[T]()
	if err != nil {
		panic(err)
	}
	return c
}

// derivedCache maps reflect.Type to cached[T] for that type.
var derivedCache sync.Map

type cached[T any] struct {
	codec Codec[T]
	err   error
}

func (c cached[T]) get() (Codec[T], error) { return c.codec, c.err }

// builtin returns the hand-written codec when T is exactly a built-in type.
// Switching on *T avoids boxing a T.
func builtin[T any]() Codec[T] {
	var c any
	switch any((*T)(nil)).(type) {
	case *int64:
		c = Int64()
	case *int32:
		c = Int32()
	case *int16:
		c = Int16()
	case *int8:
		c = Int8()
	case *int:
		c = Int()
	case *uint64:
		c = Uint64()
	case *uint32:
		c = Uint32()
	case *uint16:
		c = Uint16()
	case *uint8:
		c = Uint8()
	case *uint:
		c = Uint()
	case *float64:
		c = Float64()
	case *float32:
		c = Float32()
	case *bool:
		c = Bool()
	case *string:
		c = String()
	case *[]byte:
		c = Bytes()
	case *time.Time:
		c = Time()
	case *time.Duration:
		c = Duration()
	default:
		return nil
	}
	return c.(Codec[T])
}

// rawCodec is the codec of a type whose memory is its encoding.
type rawCodec[T any] struct{}

func (rawCodec[T]) minEncodedSize() int {
	var v T
	return int(unsafe.Sizeof(v))
}

func (rawCodec[T]) AppendEncode(dst []byte, v T) []byte {
	p := unsafe.Pointer(&v)
	// The size is fixed per instantiation, so the switch folds away; the
	// common sizes avoid a memmove call.
	switch unsafe.Sizeof(v) {
	case 8:
		return le.AppendUint64(dst, le.Uint64((*[8]byte)(p)[:]))
	case 16:
		dst = le.AppendUint64(dst, le.Uint64((*[16]byte)(p)[:8]))
		return le.AppendUint64(dst, le.Uint64((*[16]byte)(p)[8:]))
	}
	return append(dst, unsafe.Slice((*byte)(p), unsafe.Sizeof(v))...)
}

func (rawCodec[T]) Decode(src []byte) (v T, n int, err error) {
	size := int(unsafe.Sizeof(v))
	if len(src) < size {
		return v, 0, ErrTruncated
	}
	p := unsafe.Pointer(&v)
	switch size {
	case 8:
		*(*[8]byte)(p) = [8]byte(src)
	case 16:
		*(*[16]byte)(p) = [16]byte(src)
	default:
		copy(unsafe.Slice((*byte)(p), size), src)
	}
	return v, size, nil
}

func (rawCodec[T]) wireIsMemory() bool { return true }

// derived runs a compiled node on values of T. The value lives in this
// frame: noescape keeps the indirect closure calls from moving it to the
// heap (see unsafe.go), so encoding allocates nothing and decoding allocates
// only what the value itself points to.
type derived[T any] struct{ n *node }

func (c *derived[T]) minEncodedSize() int { return c.n.min }

func (c *derived[T]) AppendEncode(dst []byte, v T) []byte {
	return c.n.enc(dst, noescape(unsafe.Pointer(&v)))
}

func (c *derived[T]) Decode(src []byte) (v T, n int, err error) {
	n, err = c.n.dec(src, noescape(unsafe.Pointer(&v)))
	if err != nil {
		var zero T
		return zero, 0, err
	}
	return v, n, nil
}

// DeriveError reports a type For cannot derive a codec for.
type DeriveError struct {
	Type   reflect.Type // the type For was asked about
	Path   string       // where in Type the problem is, e.g. "main.Event.Handler"
	Reason string       // the offending type or rule
}

func (e *DeriveError) Error() string {
	return fmt.Sprintf("codec: cannot derive a codec for %s (%s)", e.Path, e.Reason)
}

// MemorySize reports whether c encodes every value of T as exactly T's
// in-memory bytes (number-only types without padding, on little-endian
// machines), and if so how many. Hot paths may then copy the bytes
// themselves instead of calling the codec.
func MemorySize[T any](c Codec[T]) (size int, ok bool) {
	if m, isMem := c.(interface{ wireIsMemory() bool }); isMem && m.wireIsMemory() {
		var v T
		return int(unsafe.Sizeof(v)), true
	}
	return 0, false
}
