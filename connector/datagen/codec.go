package datagen

import (
	"encoding/binary"
	"fmt"

	"github.com/weirhq/weir/codec"
)

// splitCodecVersion is the first byte of an encoded split, so the format
// can change without misreading old checkpoints.
const splitCodecVersion = 1

// splitCodec encodes a Split as its version byte, then Subtask and
// Parallelism as uvarints and Next and End as varints.
type splitCodec struct{}

func (splitCodec) AppendEncode(dst []byte, s Split) []byte {
	dst = append(dst, splitCodecVersion)
	dst = binary.AppendUvarint(dst, uint64(s.Subtask))
	dst = binary.AppendUvarint(dst, uint64(s.Parallelism))
	dst = binary.AppendVarint(dst, s.Next)
	return binary.AppendVarint(dst, s.End)
}

func (splitCodec) Decode(src []byte) (Split, int, error) {
	if len(src) == 0 {
		return Split{}, 0, codec.ErrTruncated
	}
	if src[0] != splitCodecVersion {
		return Split{}, 0, fmt.Errorf("%w: datagen split format version %d, want %d", codec.ErrCorrupt, src[0], splitCodecVersion)
	}
	n := 1
	var u [2]uint64
	for i := range u {
		v, k := binary.Uvarint(src[n:])
		if k <= 0 {
			return Split{}, 0, truncatedOrCorrupt(k)
		}
		u[i], n = v, n+k
	}
	var v [2]int64
	for i := range v {
		x, k := binary.Varint(src[n:])
		if k <= 0 {
			return Split{}, 0, truncatedOrCorrupt(k)
		}
		v[i], n = x, n+k
	}
	s := Split{Subtask: int(u[0]), Parallelism: int(u[1]), Next: v[0], End: v[1]}
	if u[1] < 1 || u[1] > 1<<31 || u[0] >= u[1] || s.Next < 0 || s.End < -1 || (s.End >= 0 && s.Next > s.End) {
		return Split{}, 0, fmt.Errorf("%w: datagen split %+v", codec.ErrCorrupt, s)
	}
	return s, n, nil
}

func truncatedOrCorrupt(k int) error {
	if k == 0 {
		return codec.ErrTruncated
	}
	return fmt.Errorf("%w: varint overflows 64 bits", codec.ErrCorrupt)
}

// encodeEnumState encodes an enumerator's state: the version byte, the
// parallelism at the source's first start, the count of splits not
// assigned yet, and those splits.
func encodeEnumState(parallelism int, left []Split) []byte {
	b := []byte{splitCodecVersion}
	b = binary.AppendUvarint(b, uint64(parallelism))
	b = binary.AppendUvarint(b, uint64(len(left)))
	for _, s := range left {
		b = splitCodec{}.AppendEncode(b, s)
	}
	return b
}

func decodeEnumState(b []byte) (parallelism int, left []Split, err error) {
	if len(b) == 0 {
		return 0, nil, codec.ErrTruncated
	}
	if b[0] != splitCodecVersion {
		return 0, nil, fmt.Errorf("%w: datagen enumerator state version %d, want %d", codec.ErrCorrupt, b[0], splitCodecVersion)
	}
	b = b[1:]
	p, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, truncatedOrCorrupt(k)
	}
	b = b[k:]
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, truncatedOrCorrupt(k)
	}
	b = b[k:]
	if p < 1 || p > 1<<31 || count > uint64(len(b)) {
		return 0, nil, fmt.Errorf("%w: datagen enumerator state", codec.ErrCorrupt)
	}
	for range count {
		s, n, err := splitCodec{}.Decode(b)
		if err != nil {
			return 0, nil, err
		}
		left = append(left, s)
		b = b[n:]
	}
	if len(b) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes in the datagen enumerator state", codec.ErrCorrupt, len(b))
	}
	return int(p), left, nil
}
