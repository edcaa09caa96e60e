package keyedruntime

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
)

// Hasher returns the 32-bit key hash of K that decides key groups, under
// hash version v (the job's: see keygroup.HashVersion). It is stable across
// processes and runs (no per-process seed), because every process of a job
// must send a key to the same subtask. Integers and strings (and named types
// over them) hash directly; other keys hash their encoding.
// The returned function is for one goroutine (it may reuse a buffer).
func Hasher[K comparable](v keygroup.HashVersion) func(K) uint32 {
	if !v.Valid() {
		panic(fmt.Sprintf("keyed: key hash version %d is unknown", v))
	}
	t := reflect.TypeFor[K]()
	switch t.Kind() {
	case reflect.String:
		return func(k K) uint32 { return keygroup.HashString(*(*string)(unsafe.Pointer(&k))) }
	case reflect.Int64, reflect.Int, reflect.Uint64, reflect.Uint, reflect.Uintptr:
		return func(k K) uint32 { return keygroup.HashInt64(*(*int64)(unsafe.Pointer(&k))) }
	case reflect.Int32, reflect.Uint32:
		return func(k K) uint32 { return keygroup.HashInt32(*(*int32)(unsafe.Pointer(&k))) }
	case reflect.Int16, reflect.Uint16:
		return func(k K) uint32 { return uint32(*(*uint16)(unsafe.Pointer(&k))) }
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		return func(k K) uint32 { return uint32(*(*uint8)(unsafe.Pointer(&k))) }
	case reflect.Float64:
		return func(k K) uint32 {
			f := *(*float64)(unsafe.Pointer(&k))
			if f == 0 {
				f = 0 // -0 and +0 are equal keys
			}
			return keygroup.HashInt64(int64(math.Float64bits(f)))
		}
	}
	c, err := codec.For[K]()
	if err != nil {
		panic(fmt.Sprintf("keyed: key type %s cannot be hashed: %v", t, err))
	}
	if _, raw := codec.MemorySize(c); raw {
		return func(k K) uint32 { return HashRaw(&k, v) }
	}
	var buf []byte
	return func(k K) uint32 {
		buf = c.AppendEncode(buf[:0], k)
		return v.Bytes(buf)
	}
}

// RawKey reports whether K's derived encoding is its memory (a struct or
// array of integers with no padding, on a little-endian machine): then
// HashRaw hashes it as Hasher does.
func RawKey[K comparable]() bool {
	c, err := codec.For[K]()
	if err != nil {
		return false
	}
	_, raw := codec.MemorySize(c)
	return raw
}

// HashRaw is Hasher's hash under version v of a key for which RawKey
// holds: the hash of its encoding, which is its memory, read in place.
// (One call per key: both hashes inline here, which v.Bytes would not.)
func HashRaw[K comparable](k *K, v keygroup.HashVersion) uint32 {
	b := unsafe.Slice((*byte)(unsafe.Pointer(k)), unsafe.Sizeof(*k))
	if v == keygroup.HashFNV {
		return keygroup.HashBytes(b)
	}
	return keygroup.HashWordBytes(b)
}
