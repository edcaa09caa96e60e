package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

var (
	// ErrTruncated means the input ended before the value did, given the
	// lengths the input itself declares.
	ErrTruncated = errors.New("codec: truncated input")
	// ErrCorrupt means the input cannot be the encoding of any value: a bool
	// byte other than 0 or 1, a length beyond MaxLen, a duplicate map key...
	ErrCorrupt = errors.New("codec: corrupt input")
)

// MaxLen bounds every length and element count a decoder accepts. Counts are
// also bounded by the input left, so MaxLen mostly matters for elements that
// encode to zero bytes. Encoders do not check it: a longer value encodes but
// fails to decode.
const MaxLen = 1 << 30

// maxZeroWidthAlloc bounds the memory a decoded count may allocate when its
// elements encode to zero bytes (structs made only of blank fields), because
// such counts cannot be bounded by the input left.
const maxZeroWidthAlloc = 1 << 20

// The errors below are built once so that failing decoders do not allocate.
var (
	errBool         = fmt.Errorf("%w: bool byte is neither 0 nor 1", ErrCorrupt)
	errPointerFlag  = fmt.Errorf("%w: pointer flag is neither 0 nor 1", ErrCorrupt)
	errVarint       = fmt.Errorf("%w: length varint overflows 64 bits", ErrCorrupt)
	errTooLong      = fmt.Errorf("%w: length exceeds codec.MaxLen", ErrCorrupt)
	errTooMany      = fmt.Errorf("%w: count of zero-width elements too large", ErrCorrupt)
	errIntRange     = fmt.Errorf("%w: integer out of range for int or uint", ErrCorrupt)
	errNanos        = fmt.Errorf("%w: time nanoseconds out of range", ErrCorrupt)
	errDuplicateKey = fmt.Errorf("%w: duplicate map key", ErrCorrupt)
)

// readUvarint decodes a length or count prefix.
func readUvarint(src []byte) (v uint64, n int, err error) {
	v, n = binary.Uvarint(src)
	switch {
	case n > 0:
		return v, n, nil
	case n == 0:
		return 0, 0, ErrTruncated
	default:
		return 0, 0, errVarint
	}
}

// readNilLen decodes the nil-preserving length prefix of slices, []byte and
// maps: 0 is nil, k > 0 is a value of length k-1.
func readNilLen(src []byte) (length int, isNil bool, n int, err error) {
	v, n, err := readUvarint(src)
	if err != nil {
		return 0, false, 0, err
	}
	if v == 0 {
		return 0, true, n, nil
	}
	if v-1 > MaxLen {
		return 0, false, 0, errTooLong
	}
	return int(v - 1), false, n, nil
}

// appendNilLen writes the prefix readNilLen reads.
func appendNilLen(dst []byte, length int, isNil bool) []byte {
	if isNil {
		return append(dst, 0)
	}
	return binary.AppendUvarint(dst, uint64(length)+1)
}

// checkCount validates a decoded element count before anything is allocated
// for it: each element needs at least minSize bytes of the remaining input.
// Elements that may encode to nothing are bounded by the memory they would
// take instead (zero-size elements cost nothing).
func checkCount(count, remaining, minSize int, elemSize uintptr) error {
	if minSize > 0 {
		if count > remaining/minSize {
			return ErrTruncated
		}
		return nil
	}
	if elemSize > 0 && uint64(count)*uint64(elemSize) > maxZeroWidthAlloc {
		return errTooMany
	}
	return nil
}
