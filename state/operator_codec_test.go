package state_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/state"
)

// Operator list and broadcast state record their codec identity; restoring
// one under another type fails permanently, naming the state and both
// identities, and the same types restore.
func TestOperatorStateCodecChange(t *testing.T) {
	s := state.NewOperatorStore()
	state.GetOperatorListState(s, offsetsDesc).Update([]int64{1, 2})
	state.GetBroadcastState(s, rulesDesc).Put("r", 7)
	b, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	restore := func() *state.OperatorStore {
		r := state.NewOperatorStore()
		if err := r.Restore(b); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if got := state.GetOperatorListState(restore(), offsetsDesc).Get(); len(got) != 2 {
		t.Fatalf("same codec: restored %v", got)
	}
	for _, tc := range []struct {
		name string
		get  func(*state.OperatorStore)
		want []string
	}{
		{"list", func(r *state.OperatorStore) {
			state.GetOperatorListState(r, state.ListDescriptor[string]{Name: "offsets", Codec: codec.String()})
		}, []string{`state "offsets"`, `"int64"`, `"string"`}},
		{"broadcast", func(r *state.OperatorStore) {
			state.GetBroadcastState(r, state.BroadcastDescriptor[string, string]{Name: "rules", KeyCodec: codec.String(), ValueCodec: codec.String()})
		}, []string{`state "rules"`, `"string -> int64"`, `"string -> string"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				tc.get(restore())
			}()
			be, ok := got.(*state.BackendError)
			if !ok {
				t.Fatalf("panic %v (%T), want a *state.BackendError", got, got)
			}
			if !failure.IsPermanent(be) || !errors.Is(be, be.Err) {
				t.Errorf("%v is not permanent", be)
			}
			for _, w := range tc.want {
				if !strings.Contains(be.Error(), w) {
					t.Errorf("%q does not contain %q", be.Error(), w)
				}
			}
		})
	}
}
