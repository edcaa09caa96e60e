package jobmanager

import (
	"testing"

	"github.com/weirhq/weir/internal/checkpoint/storage"
	"github.com/weirhq/weir/internal/keygroup"
)

// The key hash version of an attempt: the restored metadata's, HashFNV for
// keyed state written before versions were recorded, the current one for a
// fresh start or a checkpoint without keyed state.
func TestKeyHashFor(t *testing.T) {
	keyed := []storage.OperatorState{{OperatorID: "a"}, {OperatorID: "b", Subtasks: []storage.SubtaskState{{Keyed: []storage.KeyedHandle{{Kind: storage.KindCanonical}}}}}}
	unkeyed := []storage.OperatorState{{OperatorID: "a", Subtasks: []storage.SubtaskState{{Inline: []byte{1}}}}}
	cases := []struct {
		name string
		m    *storage.Metadata
		want keygroup.HashVersion
	}{
		{"fresh", nil, keygroup.CurrentHash},
		{"no version, keyed state", &storage.Metadata{Operators: keyed}, keygroup.HashFNV},
		{"no version, no keyed state", &storage.Metadata{Operators: unkeyed}, keygroup.CurrentHash},
		{"no version, no state", &storage.Metadata{}, keygroup.CurrentHash},
		{"fnv", &storage.Metadata{KeyHash: keygroup.HashFNV, Operators: keyed}, keygroup.HashFNV},
		{"fnv without keyed state", &storage.Metadata{KeyHash: keygroup.HashFNV}, keygroup.HashFNV},
		{"words", &storage.Metadata{KeyHash: keygroup.HashWords, Operators: keyed}, keygroup.HashWords},
	}
	for _, c := range cases {
		if got := keyHashFor(c.m); got != c.want {
			t.Errorf("%s: key hash %d, want %d", c.name, got, c.want)
		}
	}
	SetFreshKeyHash(keygroup.HashFNV)
	defer SetFreshKeyHash(0)
	if got := keyHashFor(nil); got != keygroup.HashFNV {
		t.Errorf("fresh start after SetFreshKeyHash(HashFNV): %d", got)
	}
	if got := keyHashFor(&storage.Metadata{KeyHash: keygroup.HashWords}); got != keygroup.HashWords {
		t.Errorf("restore after SetFreshKeyHash(HashFNV): %d, want the metadata's", got)
	}
}
