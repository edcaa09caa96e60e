package codec

import "time"

type (
	timeCodec     struct{}
	durationCodec struct{}
)

// timeSize is 8 bytes of Unix seconds and 4 of nanoseconds.
const timeSize = 12

// Time encodes a time.Time as its instant: int64 Unix seconds and uint32
// nanoseconds within the second. The location and the monotonic clock
// reading are not encoded; decoded times are in UTC, so they are Equal to the
// original but == only if the original was in UTC without a monotonic
// reading. The zero time.Time round-trips to the zero time.Time.
func Time() Codec[time.Time] { return timeCodec{} }

// Duration encodes a time.Duration as 8 bytes (int64 nanoseconds).
func Duration() Codec[time.Duration] { return durationCodec{} }

func (timeCodec) AppendEncode(dst []byte, v time.Time) []byte { return appendTime(dst, v) }
func (timeCodec) Decode(src []byte) (time.Time, int, error)   { return decodeTime(src) }
func (timeCodec) minEncodedSize() int                         { return timeSize }

func (durationCodec) AppendEncode(dst []byte, v time.Duration) []byte {
	return le.AppendUint64(dst, uint64(v))
}
func (durationCodec) Decode(src []byte) (time.Duration, int, error) {
	if len(src) < 8 {
		return 0, 0, ErrTruncated
	}
	return time.Duration(le.Uint64(src)), 8, nil
}
func (durationCodec) wireIsMemory() bool  { return littleEndian }
func (durationCodec) minEncodedSize() int { return 8 }

func appendTime(dst []byte, v time.Time) []byte {
	dst = le.AppendUint64(dst, uint64(v.Unix()))
	return le.AppendUint32(dst, uint32(v.Nanosecond()))
}

func decodeTime(src []byte) (time.Time, int, error) {
	if len(src) < timeSize {
		return time.Time{}, 0, ErrTruncated
	}
	sec := int64(le.Uint64(src))
	nsec := le.Uint32(src[8:])
	if nsec >= 1e9 {
		return time.Time{}, 0, errNanos
	}
	return time.Unix(sec, int64(nsec)).UTC(), timeSize, nil
}
