package codec

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Fixed-width codecs. Each is an empty struct so that converting it to
// Codec[T] does not allocate, and it is trivially safe for concurrent use.
// Numbers are little-endian: that is the memory layout of the machines we
// run on, which also lets derived codecs copy whole runs of fields (derive.go).

var le = binary.LittleEndian

// minSizer is implemented by this package's codecs so that compositions can
// bound a decoded element count by the input left before allocating.
type minSizer interface{ minEncodedSize() int }

// rawWire is implemented by codecs whose encoding of a value is exactly its
// little-endian memory, so that compositions of them can copy whole values.
type rawWire interface{ wireIsMemory() bool }

func isRawWire(c any) bool {
	r, ok := c.(rawWire)
	return ok && r.wireIsMemory()
}

// minSizeOf returns the fewest bytes c encodes a value to. Codecs from
// outside this package are assumed to use at least one byte.
func minSizeOf[T any](c Codec[T]) int {
	if s, ok := c.(minSizer); ok {
		return s.minEncodedSize()
	}
	return 1
}

type (
	int64Codec   struct{}
	int32Codec   struct{}
	int16Codec   struct{}
	int8Codec    struct{}
	intCodec     struct{}
	uint64Codec  struct{}
	uint32Codec  struct{}
	uint16Codec  struct{}
	uint8Codec   struct{}
	uintCodec    struct{}
	float64Codec struct{}
	float32Codec struct{}
	boolCodec    struct{}
)

// Int64 encodes an int64 as 8 bytes.
func Int64() Codec[int64] { return int64Codec{} }

// Int32 encodes an int32 as 4 bytes.
func Int32() Codec[int32] { return int32Codec{} }

// Int16 encodes an int16 as 2 bytes.
func Int16() Codec[int16] { return int16Codec{} }

// Int8 encodes an int8 as 1 byte.
func Int8() Codec[int8] { return int8Codec{} }

// Int encodes an int as 8 bytes on every platform; a 32-bit process decoding
// a value that does not fit gets ErrCorrupt.
func Int() Codec[int] { return intCodec{} }

// Uint64 encodes a uint64 as 8 bytes.
func Uint64() Codec[uint64] { return uint64Codec{} }

// Uint32 encodes a uint32 as 4 bytes.
func Uint32() Codec[uint32] { return uint32Codec{} }

// Uint16 encodes a uint16 as 2 bytes.
func Uint16() Codec[uint16] { return uint16Codec{} }

// Uint8 encodes a uint8 (byte) as 1 byte.
func Uint8() Codec[uint8] { return uint8Codec{} }

// Uint encodes a uint as 8 bytes on every platform (see Int).
func Uint() Codec[uint] { return uintCodec{} }

// Float64 encodes the IEEE 754 bits of a float64 as 8 bytes; NaN payloads and
// the sign of zero survive.
func Float64() Codec[float64] { return float64Codec{} }

// Float32 encodes the IEEE 754 bits of a float32 as 4 bytes.
func Float32() Codec[float32] { return float32Codec{} }

// Bool encodes a bool as one byte, 0 or 1; any other byte is ErrCorrupt, so
// that a decoded bool is always a valid Go bool.
func Bool() Codec[bool] { return boolCodec{} }

func (int64Codec) AppendEncode(dst []byte, v int64) []byte { return le.AppendUint64(dst, uint64(v)) }
func (int64Codec) Decode(src []byte) (int64, int, error) {
	if len(src) < 8 {
		return 0, 0, ErrTruncated
	}
	return int64(le.Uint64(src)), 8, nil
}
func (int64Codec) wireIsMemory() bool  { return littleEndian }
func (int64Codec) minEncodedSize() int { return 8 }

func (int32Codec) AppendEncode(dst []byte, v int32) []byte { return le.AppendUint32(dst, uint32(v)) }
func (int32Codec) Decode(src []byte) (int32, int, error) {
	if len(src) < 4 {
		return 0, 0, ErrTruncated
	}
	return int32(le.Uint32(src)), 4, nil
}
func (int32Codec) wireIsMemory() bool  { return littleEndian }
func (int32Codec) minEncodedSize() int { return 4 }

func (int16Codec) AppendEncode(dst []byte, v int16) []byte { return le.AppendUint16(dst, uint16(v)) }
func (int16Codec) Decode(src []byte) (int16, int, error) {
	if len(src) < 2 {
		return 0, 0, ErrTruncated
	}
	return int16(le.Uint16(src)), 2, nil
}
func (int16Codec) wireIsMemory() bool  { return littleEndian }
func (int16Codec) minEncodedSize() int { return 2 }

func (int8Codec) AppendEncode(dst []byte, v int8) []byte { return append(dst, byte(v)) }
func (int8Codec) Decode(src []byte) (int8, int, error) {
	if len(src) < 1 {
		return 0, 0, ErrTruncated
	}
	return int8(src[0]), 1, nil
}
func (int8Codec) wireIsMemory() bool  { return littleEndian }
func (int8Codec) minEncodedSize() int { return 1 }

func (intCodec) AppendEncode(dst []byte, v int) []byte { return le.AppendUint64(dst, uint64(int64(v))) }
func (intCodec) Decode(src []byte) (int, int, error) {
	if len(src) < 8 {
		return 0, 0, ErrTruncated
	}
	x := int64(le.Uint64(src))
	if int64(int(x)) != x { // constant-folded away on 64-bit platforms
		return 0, 0, errIntRange
	}
	return int(x), 8, nil
}
func (intCodec) wireIsMemory() bool  { return littleEndian && strconv.IntSize == 64 }
func (intCodec) minEncodedSize() int { return 8 }

func (uint64Codec) AppendEncode(dst []byte, v uint64) []byte { return le.AppendUint64(dst, v) }
func (uint64Codec) Decode(src []byte) (uint64, int, error) {
	if len(src) < 8 {
		return 0, 0, ErrTruncated
	}
	return le.Uint64(src), 8, nil
}
func (uint64Codec) wireIsMemory() bool  { return littleEndian }
func (uint64Codec) minEncodedSize() int { return 8 }

func (uint32Codec) AppendEncode(dst []byte, v uint32) []byte { return le.AppendUint32(dst, v) }
func (uint32Codec) Decode(src []byte) (uint32, int, error) {
	if len(src) < 4 {
		return 0, 0, ErrTruncated
	}
	return le.Uint32(src), 4, nil
}
func (uint32Codec) wireIsMemory() bool  { return littleEndian }
func (uint32Codec) minEncodedSize() int { return 4 }

func (uint16Codec) AppendEncode(dst []byte, v uint16) []byte { return le.AppendUint16(dst, v) }
func (uint16Codec) Decode(src []byte) (uint16, int, error) {
	if len(src) < 2 {
		return 0, 0, ErrTruncated
	}
	return le.Uint16(src), 2, nil
}
func (uint16Codec) wireIsMemory() bool  { return littleEndian }
func (uint16Codec) minEncodedSize() int { return 2 }

func (uint8Codec) AppendEncode(dst []byte, v uint8) []byte { return append(dst, v) }
func (uint8Codec) Decode(src []byte) (uint8, int, error) {
	if len(src) < 1 {
		return 0, 0, ErrTruncated
	}
	return src[0], 1, nil
}
func (uint8Codec) wireIsMemory() bool  { return littleEndian }
func (uint8Codec) minEncodedSize() int { return 1 }

func (uintCodec) AppendEncode(dst []byte, v uint) []byte { return le.AppendUint64(dst, uint64(v)) }
func (uintCodec) Decode(src []byte) (uint, int, error) {
	if len(src) < 8 {
		return 0, 0, ErrTruncated
	}
	x := le.Uint64(src)
	if uint64(uint(x)) != x {
		return 0, 0, errIntRange
	}
	return uint(x), 8, nil
}
func (uintCodec) wireIsMemory() bool  { return littleEndian && strconv.IntSize == 64 }
func (uintCodec) minEncodedSize() int { return 8 }

func (float64Codec) AppendEncode(dst []byte, v float64) []byte {
	return le.AppendUint64(dst, math.Float64bits(v))
}
func (float64Codec) Decode(src []byte) (float64, int, error) {
	if len(src) < 8 {
		return 0, 0, ErrTruncated
	}
	return math.Float64frombits(le.Uint64(src)), 8, nil
}
func (float64Codec) wireIsMemory() bool  { return littleEndian }
func (float64Codec) minEncodedSize() int { return 8 }

func (float32Codec) AppendEncode(dst []byte, v float32) []byte {
	return le.AppendUint32(dst, math.Float32bits(v))
}
func (float32Codec) Decode(src []byte) (float32, int, error) {
	if len(src) < 4 {
		return 0, 0, ErrTruncated
	}
	return math.Float32frombits(le.Uint32(src)), 4, nil
}
func (float32Codec) wireIsMemory() bool  { return littleEndian }
func (float32Codec) minEncodedSize() int { return 4 }

func (boolCodec) AppendEncode(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}
func (boolCodec) Decode(src []byte) (bool, int, error) {
	if len(src) < 1 {
		return false, 0, ErrTruncated
	}
	switch src[0] {
	case 0:
		return false, 1, nil
	case 1:
		return true, 1, nil
	}
	return false, 0, errBool
}
func (boolCodec) minEncodedSize() int { return 1 }
