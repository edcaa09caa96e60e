package benchjobs

import (
	"sync/atomic"
	"testing"
)

// oneValue is a ValueState of a single key.
type oneValue struct {
	v  []byte
	ok bool
}

func (o *oneValue) Value() ([]byte, bool) { return o.v, o.ok }
func (o *oneValue) Update(v []byte)       { o.v, o.ok = v, true }
func (o *oneValue) Clear()                { o.v, o.ok = nil, false }

// The verification counts a key as verified only when its restored value
// is exactly the one derived from it: a missing, truncated or other key's
// value fails.
func TestSavepointVerification(t *testing.T) {
	var loaded, verified, failed atomic.Int64
	st := &oneValue{}
	s := &spState{size: 100, loaded: &loaded, verified: &verified, failed: &failed, v: st}
	if err := s.ProcessElement(nil, -8, nil); err != nil { // key 7, nothing stored
		t.Fatal(err)
	}
	if err := s.ProcessElement(nil, 7, nil); err != nil { // load key 7
		t.Fatal(err)
	}
	if len(st.v) != 100 || loaded.Load() != 1 {
		t.Fatalf("loaded %d, value of %d bytes", loaded.Load(), len(st.v))
	}
	if err := s.ProcessElement(nil, -8, nil); err != nil { // verify key 7
		t.Fatal(err)
	}
	st.v = st.v[:99]
	_ = s.ProcessElement(nil, -8, nil)
	st.v = spValue(nil, 8, 100)
	_ = s.ProcessElement(nil, -8, nil)
	if verified.Load() != 1 || failed.Load() != 3 {
		t.Fatalf("verified %d, failed %d; want 1 and 3", verified.Load(), failed.Load())
	}
}

// Values are deterministic per key, differ between keys and have the
// asked size (also when it is not a multiple of 8).
func TestSpValue(t *testing.T) {
	a, b := spValue(nil, 1, 13), spValue(nil, 1, 13)
	if string(a) != string(b) || len(a) != 13 {
		t.Fatalf("%x %x", a, b)
	}
	if string(spValue(nil, 2, 13)) == string(a) {
		t.Fatal("keys 1 and 2 have the same value")
	}
	if spKey(-1) != 0 || spKey(5) != 5 || spKey(-6) != 5 {
		t.Fatal("spKey")
	}
}
