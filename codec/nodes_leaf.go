package codec

import (
	"time"
	"unsafe"
)

// rawNode copies size bytes of memory as the encoding. Only built on
// little-endian machines for types without padding or invalid bit patterns.
func rawNode(size uintptr) *node {
	return &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte {
			return append(dst, unsafe.Slice((*byte)(p), size)...)
		},
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if uintptr(len(src)) < size {
				return 0, ErrTruncated
			}
			copy(unsafe.Slice((*byte)(p), size), src)
			return int(size), nil
		},
		min: int(size), size: size, raw: true,
	}
}

// Leaf nodes, shared by every compiled type. They produce the same bytes as
// the hand-written codecs.
var (
	fixed1Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return append(dst, *(*byte)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 1 {
				return 0, ErrTruncated
			}
			*(*byte)(p) = src[0]
			return 1, nil
		},
		min: 1, size: 1, raw: littleEndian,
	}
	fixed2Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return le.AppendUint16(dst, *(*uint16)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 2 {
				return 0, ErrTruncated
			}
			*(*uint16)(p) = le.Uint16(src)
			return 2, nil
		},
		min: 2, size: 2, raw: littleEndian,
	}
	fixed4Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return le.AppendUint32(dst, *(*uint32)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 4 {
				return 0, ErrTruncated
			}
			*(*uint32)(p) = le.Uint32(src)
			return 4, nil
		},
		min: 4, size: 4, raw: littleEndian,
	}
	fixed8Node = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return le.AppendUint64(dst, *(*uint64)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (int, error) {
			if len(src) < 8 {
				return 0, ErrTruncated
			}
			*(*uint64)(p) = le.Uint64(src)
			return 8, nil
		},
		min: 8, size: 8, raw: littleEndian,
	}
	// int and uint on 32-bit platforms: 8 bytes on the wire, range-checked.
	int32BitNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return Int().AppendEncode(dst, *(*int)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*int)(p), n, err = Int().Decode(src)
			return n, err
		},
		min: 8, size: unsafe.Sizeof(int(0)),
	}
	uint32BitNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return Uint().AppendEncode(dst, *(*uint)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*uint)(p), n, err = Uint().Decode(src)
			return n, err
		},
		min: 8, size: unsafe.Sizeof(uint(0)),
	}
	boolNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return Bool().AppendEncode(dst, *(*bool)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*bool)(p), n, err = Bool().Decode(src)
			return n, err
		},
		min: 1, size: 1,
	}
	stringNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return appendString(dst, *(*string)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*string)(p), n, err = decodeString(src)
			return n, err
		},
		min: 1, size: unsafe.Sizeof(""),
	}
	bytesNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return appendBytes(dst, *(*[]byte)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*[]byte)(p), n, err = decodeBytes(src)
			return n, err
		},
		min: 1, size: unsafe.Sizeof([]byte(nil)),
	}
	timeNode = &node{
		enc: func(dst []byte, p unsafe.Pointer) []byte { return appendTime(dst, *(*time.Time)(p)) },
		dec: func(src []byte, p unsafe.Pointer) (n int, err error) {
			*(*time.Time)(p), n, err = decodeTime(src)
			return n, err
		},
		min: timeSize, size: unsafe.Sizeof(time.Time{}),
	}
)
