package kafka

import (
	"encoding/binary"
	"fmt"

	"github.com/weirhq/weir/codec"
)

// Committable is an exactly-once sink's pre-committed Kafka transaction:
// its transactional id and the producer id and epoch that wrote it. The
// committer ends it with EndTxn(commit) for that producer id and epoch.
type Committable struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
}

// committableVersion is the first byte of an encoded Committable.
const committableVersion = 1

// maxTransactionalID bounds the decoded id (Kafka's own limit is a
// 16-bit string length).
const maxTransactionalID = 1 << 15

// committableCodec encodes a Committable as the version byte, the
// transactional id (uvarint length and bytes), the producer id (zigzag
// varint) and the epoch (zigzag varint, within int16).
type committableCodec struct{}

func (committableCodec) AppendEncode(dst []byte, c Committable) []byte {
	dst = append(dst, committableVersion)
	dst = binary.AppendUvarint(dst, uint64(len(c.TransactionalID)))
	dst = append(dst, c.TransactionalID...)
	dst = binary.AppendVarint(dst, c.ProducerID)
	return binary.AppendVarint(dst, int64(c.Epoch))
}

func (committableCodec) Decode(src []byte) (Committable, int, error) {
	if len(src) == 0 {
		return Committable{}, 0, codec.ErrTruncated
	}
	if src[0] != committableVersion {
		return Committable{}, 0, fmt.Errorf("%w: kafka committable format version %d, want %d", codec.ErrCorrupt, src[0], committableVersion)
	}
	n := 1
	l, k := binary.Uvarint(src[n:])
	if k == 0 {
		return Committable{}, 0, codec.ErrTruncated
	}
	if k < 0 || l > maxTransactionalID {
		return Committable{}, 0, fmt.Errorf("%w: kafka committable: transactional id length", codec.ErrCorrupt)
	}
	n += k
	if uint64(len(src)-n) < l {
		return Committable{}, 0, codec.ErrTruncated
	}
	var c Committable
	c.TransactionalID = string(src[n : n+int(l)])
	n += int(l)
	pid, k := binary.Varint(src[n:])
	if k == 0 {
		return Committable{}, 0, codec.ErrTruncated
	}
	if k < 0 {
		return Committable{}, 0, fmt.Errorf("%w: kafka committable: producer id", codec.ErrCorrupt)
	}
	n += k
	epoch, k := binary.Varint(src[n:])
	if k == 0 {
		return Committable{}, 0, codec.ErrTruncated
	}
	if k < 0 || epoch < -1<<15 || epoch >= 1<<15 {
		return Committable{}, 0, fmt.Errorf("%w: kafka committable: epoch", codec.ErrCorrupt)
	}
	n += k
	c.ProducerID, c.Epoch = pid, int16(epoch)
	return c, n, nil
}
