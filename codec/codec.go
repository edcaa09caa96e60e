package codec

// Codec encodes and decodes values of type T to and from bytes.
//
// Codecs sit on the hot path between tasks and in state backends, so they
// append into caller-owned buffers and decode from slices without copying where
// the type allows. A Codec must be safe for concurrent use by many goroutines.
type Codec[T any] interface {
	// AppendEncode appends the encoding of v to dst and returns the extended slice.
	AppendEncode(dst []byte, v T) []byte
	// Decode decodes one value from the start of src and returns it with the
	// number of bytes it used. Corrupted or truncated input returns an error,
	// never a panic. Decoded values never alias src (src is reused afterwards).
	Decode(src []byte) (v T, n int, err error)
}
