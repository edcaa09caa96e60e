package typedstore

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/testseed"
)

// TestStoreImageOfKeyAndNamespace changes key and namespace in random order
// and lengths (short keys with short namespaces take the word path, longer
// ones build cur) and checks the current image and key against imageOf of
// the map key built from scratch.
func TestStoreImageOfKeyAndNamespace(t *testing.T) {
	r := testseed.Rand(t, 3)
	s := NewStore(keygroup.Range{Start: 0, End: 0}, 1, clock.NewManual(0))
	var key, ns []byte
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		if n > 0 && r.IntN(4) == 0 {
			b[n-1] = 0 // trailing zeros must not alias a shorter key
		}
		return b
	}
	for i := 0; i < 100000; i++ {
		switch r.IntN(3) {
		case 0:
			key = rnd(r.IntN(20))
			s.SetCurrentKey(key, 0)
		case 1: // an 8-byte key by its word (SetCurrentKeyWord)
			key = rnd(8)
			s.SetCurrentKeyWord(binary.LittleEndian.Uint64(key), 0)
		default:
			ns = rnd([]int{0, 7, 8, 16, r.IntN(20)}[r.IntN(5)])
			s.SetCurrentNamespace(ns)
		}
		if key == nil {
			continue
		}
		mk := mapKey(nil, key, ns)
		if got, want := *s.image(), imageOf(mk); got != want {
			t.Fatalf("step %d: key %x ns %x: image %+v, want %+v", i, key, ns, got, want)
		}
		if got := s.CurrentKey(); !bytes.Equal(got, key) {
			t.Fatalf("step %d: CurrentKey %x, want %x", i, got, key)
		}
		s.materialize()
		if !bytes.Equal(s.cur, mk) {
			t.Fatalf("step %d: cur %x, want %x", i, s.cur, mk)
		}
	}
}
