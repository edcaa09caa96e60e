package shortkey

import "encoding/binary"

// Words loads up to 16 bytes of b as little-endian words, zero-padded;
// bytes past the 16th are ignored.
func Words(b []byte) (w0, w1 uint64) {
	if len(b) > 8 {
		return binary.LittleEndian.Uint64(b), tail(b[8:])
	}
	return tail(b), 0
}

// tail loads up to 8 bytes as a little-endian word, zero-padded, with no
// stores (a byte-wise copy into a word and reading it back stalls store
// forwarding; this is on every state access).
func tail(b []byte) uint64 {
	switch n := len(b); {
	case n >= 8:
		return binary.LittleEndian.Uint64(b)
	case n >= 4:
		// Two overlapping 4-byte loads; the overlap ORs equal bytes.
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*(n-4))
	case n > 0:
		return uint64(b[0]) | uint64(b[n/2])<<(8*(n/2)) | uint64(b[n-1])<<(8*(n-1))
	}
	return 0
}
