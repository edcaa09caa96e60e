package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// The encoders append one frame to dst and return the extended slice. On
// error dst is returned unchanged. They check every bound the Decoder
// checks, except the receiver's buffer size, which only the receiver
// knows: a data payload may have up to MaxBufferSize bytes here.

var le = binary.LittleEndian

// AppendHello appends h's HELLO frame, with Magic and Version.
func AppendHello(dst []byte, h Hello) ([]byte, error) {
	for _, f := range [...]struct{ name, v string }{{"TaskManager", h.TaskManager}, {"Session", h.Session}, {"BuildID", h.BuildID}} {
		if len(f.v) > MaxIDLen {
			return dst, encodeErr(TypeHello, f.name, "%d bytes, more than the %d an id may have (MaxIDLen)", len(f.v), MaxIDLen)
		}
	}
	n := helloFixed + len(h.TaskManager) + len(h.Session) + len(h.BuildID)
	b := appendHeader(dst, TypeHello, n)
	b = append(b, Magic...)
	b = le.AppendUint16(b, Version)
	b = appendID(b, h.TaskManager)
	b = appendID(b, h.Session)
	b = le.AppendUint64(b, h.Epoch)
	return appendID(b, h.BuildID), nil
}

// AppendPartitionRequest appends r's PARTITION_REQUEST frame.
func AppendPartitionRequest(dst []byte, r PartitionRequest) ([]byte, error) {
	k := r.Key
	if len(k.Job) > MaxIDLen {
		return dst, encodeErr(TypePartitionRequest, "Key.Job", "%d bytes, more than the %d an id may have (MaxIDLen)", len(k.Job), MaxIDLen)
	}
	for _, f := range [...]struct {
		name string
		v    int
	}{{"Key.Edge", k.Edge}, {"Key.Producer", k.Producer}, {"Key.Attempt", k.Attempt}} {
		if f.v < 0 || f.v > math.MaxUint32 {
			return dst, encodeErr(TypePartitionRequest, f.name, "%d is outside 0 to %d", f.v, uint32(math.MaxUint32))
		}
	}
	b := appendHeader(dst, TypePartitionRequest, requestFixed+len(k.Job))
	b = le.AppendUint32(b, r.Channel)
	b = appendID(b, k.Job)
	b = le.AppendUint32(b, uint32(k.Edge))
	b = le.AppendUint32(b, uint32(k.Producer))
	b = le.AppendUint32(b, uint32(k.Attempt))
	b = le.AppendUint32(b, r.Subpartition)
	return le.AppendUint32(b, r.Credit), nil
}

// AppendBuffer appends the BUFFER frame of h and payload (h.Len is
// ignored), copying the payload. For large payloads use AppendBufferVec.
func AppendBuffer(dst []byte, h BufferHeader, payload []byte) ([]byte, error) {
	b, err := AppendBufferHeader(dst, h, len(payload))
	if err != nil {
		return dst, err
	}
	return append(b, payload...), nil
}

// AppendBufferHeader appends the BufferHeaderSize bytes that precede a
// payload of payloadLen bytes in a BUFFER frame (h.Len is ignored); the
// payload itself must follow on the stream.
func AppendBufferHeader(dst []byte, h BufferHeader, payloadLen int) ([]byte, error) {
	if err := checkBuffer(h, payloadLen); err != nil {
		return dst, err
	}
	b := appendHeader(dst, TypeBuffer, bufferFixed+payloadLen)
	b = le.AppendUint32(b, h.Channel)
	b = le.AppendUint32(b, h.Sequence)
	b = le.AppendUint32(b, h.Backlog)
	var flags byte
	if h.Priority {
		flags = flagPriority
	}
	return append(b, h.Kind, flags), nil
}

// AppendBufferVec appends one BUFFER frame to vec, a gather list for
// writev (net.Buffers(vec)), as two slices: its header, appended to hdrs,
// and payload itself, not copied. It returns the extended vec and hdrs.
// A writer keeps vec and hdrs across the frames of one write and resets
// both (vec[:0], hdrs[:0]) only after the write: the header slices in vec
// point into hdrs, and stay valid when hdrs grows (the old array is kept
// as it was), so size hdrs for a write's frames to allocate nothing.
// On error vec and hdrs are returned unchanged.
func AppendBufferVec(vec [][]byte, hdrs []byte, h BufferHeader, payload []byte) ([][]byte, []byte, error) {
	start := len(hdrs)
	out, err := AppendBufferHeader(hdrs, h, len(payload))
	if err != nil {
		return vec, hdrs, err
	}
	vec = append(vec, out[start:len(out):len(out)])
	if len(payload) > 0 {
		vec = append(vec, payload)
	}
	return vec, out, nil
}

// AppendAddCredit appends the ADD_CREDIT frame granting credits: 1 to
// MaxCredits pairs.
func AppendAddCredit(dst []byte, credits []Credit) ([]byte, error) {
	if len(credits) == 0 || len(credits) > MaxCredits {
		return dst, encodeErr(TypeAddCredit, "count", "%d pairs, want 1 to %d (MaxCredits)", len(credits), MaxCredits)
	}
	b := appendHeader(dst, TypeAddCredit, 4+creditPair*len(credits))
	b = le.AppendUint32(b, uint32(len(credits)))
	for _, c := range credits {
		b = le.AppendUint32(b, c.Channel)
		b = le.AppendUint32(b, c.Credit)
	}
	return b, nil
}

// AppendCancelRequest appends the CANCEL_REQUEST frame of channel.
func AppendCancelRequest(dst []byte, channel uint32) []byte {
	return le.AppendUint32(appendHeader(dst, TypeCancelRequest, 4), channel)
}

// AppendError appends e's ERROR frame. A text longer than MaxTextLen is
// cut to fit, at a UTF-8 character boundary, and ends in "...": an ERROR
// is sent while failing, so it always encodes.
func AppendError(dst []byte, e ErrorFrame) []byte {
	text := e.Text
	if len(text) > MaxTextLen {
		cut := MaxTextLen - len("...")
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "..."
	}
	b := appendHeader(dst, TypeError, errorFixed+len(text))
	b = le.AppendUint32(b, e.Channel)
	b = le.AppendUint16(b, uint16(len(text)))
	return append(b, text...)
}

func appendHeader(dst []byte, t Type, bodyLen int) []byte {
	return append(le.AppendUint32(dst, uint32(bodyLen)), byte(t))
}

func appendID(b []byte, s string) []byte {
	return append(append(b, byte(len(s))), s...)
}

// checkBuffer checks a BUFFER's fields and payload length against the
// bounds every receiver applies.
func checkBuffer(h BufferHeader, payloadLen int) error {
	switch {
	case h.Kind >= NumKinds:
		return encodeErr(TypeBuffer, "kind", "%d, want below %d (NumKinds)", h.Kind, NumKinds)
	case h.Kind == KindData && h.Priority:
		return encodeErr(TypeBuffer, "flags", "priority on a data buffer (only events overtake data)")
	case h.Kind == KindData && payloadLen > MaxBufferSize:
		return encodeErr(TypeBuffer, "payload", "%d bytes, more than the %d a network buffer may have (MaxBufferSize)", payloadLen, MaxBufferSize)
	case h.Kind != KindData && payloadLen > MaxEventSize:
		return encodeErr(TypeBuffer, "payload", "an event of kind %d with %d bytes, more than the %d an event may have (MaxEventSize)", h.Kind, payloadLen, MaxEventSize)
	}
	return nil
}

func encodeErr(t Type, field, format string, args ...any) error {
	return fmt.Errorf("wire: encoding %s: field %s: %s", t, field, fmt.Sprintf(format, args...))
}
