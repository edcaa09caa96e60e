// Package wire owns the data-plane frames between TaskManagers: their
// layout (frame.go), an encoder that appends them to byte slices or to a
// writev gather list without copying payloads (encode.go), a decoder that
// reads them from a bufio.Reader (decode.go), and the per-channel sequence
// numbers (sequence.go). It does no I/O of its own and imports only the
// standard library (internal/layering); internal/network/tcp runs it on
// connections. Design: docs/distributed-runtime.md, decisions 16-22.
//
// Invariants:
//   - A frame is length u32 | type u8 | body, little-endian fixed width;
//     type numbers are never reused. The first frame each way is HELLO,
//     whose magic and version are checked before its length is believed.
//   - A BUFFER's payload is a network.Buffer's Data byte for byte: the
//     record framing and event encodings of internal/network cross
//     unchanged. Its kind byte is a network.Kind and its fields mirror
//     network's (KindData, NumKinds, PartitionKey); internal/network's
//     tests hold the mirrors equal, since wire cannot import network.
//   - Every length is checked against its bound before anything is
//     allocated or read: data payloads against the receiver's buffer size,
//     events against MaxEventSize, ids MaxIDLen, texts MaxTextLen, credit
//     batches MaxCredits. Errors name the frame type, the field and the
//     bound.
//   - Decoding is canonical: a frame the decoder accepts re-encodes to the
//     same bytes (FuzzDecode), so unknown flag bits, kinds and trailing
//     bytes are errors.
//   - The per-frame path allocates nothing: BUFFER headers are decoded into
//     the Decoder and payloads read into the caller's buffer; headers are
//     appended to caller-owned slices.
//   - Sequence numbers run per channel from 0 and wrap at 2^32; a gap or a
//     repeat is an error.
package wire
