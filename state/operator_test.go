package state_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/state"
)

var (
	offsetsDesc = state.ListDescriptor[int64]{Name: "offsets", Codec: codec.Int64()}
	txnDesc     = state.ListDescriptor[string]{Name: "txns", Codec: codec.String()}
	rulesDesc   = state.BroadcastDescriptor[string, int64]{Name: "rules", KeyCodec: codec.String(), ValueCodec: codec.Int64()}
)

// TestOperatorStateRescale snapshots 3 subtasks' operator state, through the
// byte encoding, and restores it at parallelism 2: list state is split,
// union state and broadcast state are everywhere.
func TestOperatorStateRescale(t *testing.T) {
	var encoded [][]byte
	for i := range 3 {
		s := state.NewOperatorStore()
		state.GetOperatorListState(s, offsetsDesc).AddAll([]int64{int64(10 * i), int64(10*i + 1)})
		state.GetUnionListState(s, txnDesc).Add(fmt.Sprint("txn-", i))
		b := state.GetBroadcastState(s, rulesDesc)
		b.Put("max", 500)
		b.Put("min", 1)
		enc, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, enc)
	}
	var old []snapshot.OperatorSnapshot
	for _, b := range encoded {
		s, err := snapshot.DecodeOperator(b)
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, s)
	}
	news, err := snapshot.RedistributeOperator(old, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ns := range news {
		s := state.NewOperatorStore()
		if err := s.Restore(snapshot.EncodeOperator(ns)); err != nil {
			t.Fatal(err)
		}
		rules := maps.Collect(state.GetBroadcastState(s, rulesDesc).All())
		got = append(got, fmt.Sprint(state.GetOperatorListState(s, offsetsDesc).Get(), state.GetUnionListState(s, txnDesc).Get(), rules))
	}
	want := "[0 1 10] [txn-0 txn-1 txn-2] map[max:500 min:1] | [11 20 21] [txn-0 txn-1 txn-2] map[max:500 min:1]"
	if g := strings.Join(got, " | "); g != want {
		t.Fatalf("restored:\n got %s\nwant %s", g, want)
	}
}

func TestOperatorStateKeepsUnregisteredState(t *testing.T) {
	s := state.NewOperatorStore()
	s.Restore(snapshot.EncodeOperator(snapshot.OperatorSnapshot{States: []snapshot.OperatorState{{Name: "old", Kind: snapshot.KindOperatorList, Elements: [][]byte{{1}}}}}))
	enc, _ := s.Snapshot()
	snap, err := snapshot.DecodeOperator(enc)
	if err != nil || len(snap.States) != 1 || snap.States[0].Name != "old" {
		t.Fatalf("snapshot lost restored state: %+v", snap)
	}
	mustPanic(t, `operator state "old" was restored as operator list state, requested as operator union list state`, func() {
		state.GetUnionListState(s, state.ListDescriptor[int64]{Name: "old", Codec: codec.Int64()})
	})
}
