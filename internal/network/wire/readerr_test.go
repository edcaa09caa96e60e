package wire

import (
	"bufio"
	"errors"
	"io"
	"syscall"
	"testing"
)

// TestNextKeepsTheReadError: a read that fails between frames (a reset,
// a timeout) returns its cause, not an end of stream, so the connection's
// error says what happened.
func TestNextKeepsTheReadError(t *testing.T) {
	for _, cause := range []error{syscall.ECONNRESET, syscall.ETIMEDOUT} {
		r := &failingReader{err: cause}
		d, err := NewDecoder(bufio.NewReader(r), MinBufferSize)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Next()
		if !errors.Is(err, cause) || errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Next after a read failing with %v returned %v", cause, err)
		}
	}
}

type failingReader struct{ err error }

func (f *failingReader) Read([]byte) (int, error) { return 0, f.err }
