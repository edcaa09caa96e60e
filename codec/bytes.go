package codec

import "encoding/binary"

type (
	stringCodec struct{}
	bytesCodec  struct{}
)

// String encodes a string as a uvarint length and its bytes. Decoding copies,
// so the result never aliases the input buffer.
func String() Codec[string] { return stringCodec{} }

// Bytes encodes a []byte as a nil-preserving length (see the package doc) and
// its bytes. Decoding copies; an empty non-nil slice decodes without
// allocating.
func Bytes() Codec[[]byte] { return bytesCodec{} }

func (stringCodec) AppendEncode(dst []byte, v string) []byte { return appendString(dst, v) }
func (stringCodec) Decode(src []byte) (string, int, error)   { return decodeString(src) }
func (stringCodec) minEncodedSize() int                      { return 1 }

func (bytesCodec) AppendEncode(dst []byte, v []byte) []byte { return appendBytes(dst, v) }
func (bytesCodec) Decode(src []byte) ([]byte, int, error)   { return decodeBytes(src) }
func (bytesCodec) minEncodedSize() int                      { return 1 }

// The functions below are shared with derived codecs.

func appendString(dst []byte, v string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

func decodeString(src []byte) (string, int, error) {
	length, n, err := readUvarint(src)
	if err != nil {
		return "", 0, err
	}
	if length > MaxLen {
		return "", 0, errTooLong
	}
	end := n + int(length)
	if end > len(src) {
		return "", 0, ErrTruncated
	}
	return string(src[n:end]), end, nil
}

func appendBytes(dst []byte, v []byte) []byte {
	dst = appendNilLen(dst, len(v), v == nil)
	return append(dst, v...)
}

func decodeBytes(src []byte) ([]byte, int, error) {
	length, isNil, n, err := readNilLen(src)
	if err != nil || isNil {
		return nil, n, err
	}
	end := n + length
	if end > len(src) {
		return nil, 0, ErrTruncated
	}
	if length == 0 {
		return []byte{}, n, nil // points at the runtime's zero-size base: no allocation
	}
	out := make([]byte, length)
	copy(out, src[n:end])
	return out, end, nil
}
