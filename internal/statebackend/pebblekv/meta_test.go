package pebblekv

import (
	"testing"

	"github.com/weirhq/weir/internal/snapshot"
)

// State metadata round-trips, with and without a codec identity; metadata
// written before codec identities existed (ending after the TTL update
// byte) still decodes, with Codec "".
func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []snapshot.StateMeta{
		{Name: "a", Kind: snapshot.KindValue},
		{Name: "b", Kind: snapshot.KindMap, TTLMillis: 60000, TTLUpdate: snapshot.TTLOnReadAndWrite, Codec: "string -> int64"},
		{Name: "c", Kind: snapshot.KindValue, Codec: "main.Event", Schema: "\x01\x00\x11"},
		{Name: "d", Kind: snapshot.KindMap, Schema: "s", KeySchema: "k"},
	} {
		got, id, err := decodeMeta(m.Name, encodeMeta(7, m))
		if err != nil || got != m || id != 7 {
			t.Errorf("%+v: decoded %+v id %d err %v", m, got, id, err)
		}
	}
	// The layout before codec identities: id, kind, ttl varint, update.
	old := []byte{0, 3, byte(snapshot.KindList), 0, 0}
	got, id, err := decodeMeta("old", old)
	if err != nil || id != 3 || got.Kind != snapshot.KindList || got.Codec != "" {
		t.Errorf("old layout: %+v id %d err %v", got, id, err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(encodeMeta(1, snapshot.StateMeta{Name: "s", Kind: snapshot.KindValue, Codec: "int64"}))
	f.Add([]byte{0, 3, byte(snapshot.KindList), 0, 0})
	f.Add(encodeMeta(1, snapshot.StateMeta{Name: "s", Kind: snapshot.KindMap, Codec: "k -> v", Schema: "v", KeySchema: "k"}))
	f.Fuzz(func(t *testing.T, v []byte) {
		m, id, err := decodeMeta("s", v)
		if err != nil {
			return
		}
		// What decodes re-encodes to a value that decodes the same.
		m2, id2, err := decodeMeta("s", encodeMeta(id, m))
		if err != nil || m2 != m || id2 != id {
			t.Fatalf("%x: %+v/%d re-decodes as %+v/%d (%v)", v, m, id, m2, id2, err)
		}
	})
}
