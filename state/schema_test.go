package state_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/state"
)

type ruleV1 struct {
	Limit int64
	Owner string
	Old   bool
}

type ruleV2 struct {
	Owner string
	Limit int64
	New   []string
}

type ruleKeyV1 struct{ ID int64 }
type ruleKeyV2 struct {
	ID   int64
	Kind string
}

// Operator list and broadcast state migrate their elements when the struct
// gains and loses fields: the kept fields keep their values.
func TestOperatorStateSchemaMigration(t *testing.T) {
	s := state.NewOperatorStore()
	c1 := codec.MustFor[ruleV1]()
	state.GetOperatorListState(s, state.ListDescriptor[ruleV1]{Name: "pending", Codec: c1}).Update([]ruleV1{{1, "a", true}, {2, "b", false}})
	bs := state.GetBroadcastState(s, state.BroadcastDescriptor[ruleKeyV1, ruleV1]{Name: "rules", KeyCodec: codec.MustFor[ruleKeyV1](), ValueCodec: c1})
	bs.Put(ruleKeyV1{7}, ruleV1{70, "x", true})
	bs.Put(ruleKeyV1{8}, ruleV1{80, "y", false})
	b, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := state.NewOperatorStore()
	if err := r.Restore(b); err != nil {
		t.Fatal(err)
	}
	c2 := codec.MustFor[ruleV2]()
	got := state.GetOperatorListState(r, state.ListDescriptor[ruleV2]{Name: "pending", Codec: c2}).Get()
	if want := []ruleV2{{"a", 1, nil}, {"b", 2, nil}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("list: %+v, want %+v", got, want)
	}
	rb := state.GetBroadcastState(r, state.BroadcastDescriptor[ruleKeyV2, ruleV2]{Name: "rules", KeyCodec: codec.MustFor[ruleKeyV2](), ValueCodec: c2})
	m := map[ruleKeyV2]ruleV2{}
	for k, v := range rb.All() {
		m[k] = v
	}
	if want := map[ruleKeyV2]ruleV2{{7, ""}: {"x", 70, nil}, {8, ""}: {"y", 80, nil}}; !reflect.DeepEqual(m, want) {
		t.Fatalf("broadcast: %+v, want %+v", m, want)
	}
}

// A changed field type of operator state is refused, permanently, naming
// the state and the field.
func TestOperatorStateSchemaTypeChange(t *testing.T) {
	s := state.NewOperatorStore()
	state.GetOperatorListState(s, state.ListDescriptor[ruleV1]{Name: "pending", Codec: codec.MustFor[ruleV1]()}).Add(ruleV1{1, "a", true})
	b, _ := s.Snapshot()
	r := state.NewOperatorStore()
	if err := r.Restore(b); err != nil {
		t.Fatal(err)
	}
	type ruleBad struct{ Limit string }
	var got any
	func() {
		defer func() { got = recover() }()
		state.GetOperatorListState(r, state.ListDescriptor[ruleBad]{Name: "pending", Codec: codec.MustFor[ruleBad]()})
	}()
	be, ok := got.(*state.BackendError)
	if !ok || !failure.IsPermanent(be) {
		t.Fatalf("panic %v, want a permanent *state.BackendError", got)
	}
	for _, w := range []string{`state "pending"`, "ruleBad.Limit", "from int64 to string"} {
		if !strings.Contains(be.Error(), w) {
			t.Errorf("%q does not contain %q", be.Error(), w)
		}
	}
}

// Snapshots from before schemas (operator format 2: codec identity only)
// restore as they did: same identity restores, another is refused.
func TestOperatorStateWithoutSchemaRestoresAsBefore(t *testing.T) {
	enc, err := codec.For[ruleV1]()
	if err != nil {
		t.Fatal(err)
	}
	old := snapshot.EncodeOperator(snapshot.OperatorSnapshot{States: []snapshot.OperatorState{{
		Name: "pending", Kind: snapshot.KindOperatorList, Codec: "state_test.ruleV1",
		Elements: [][]byte{enc.AppendEncode(nil, ruleV1{5, "o", true})},
	}}})
	r := state.NewOperatorStore()
	if err := r.Restore(old); err != nil {
		t.Fatal(err)
	}
	got := state.GetOperatorListState(r, state.ListDescriptor[ruleV1]{Name: "pending", Codec: enc}).Get()
	if want := []ruleV1{{5, "o", true}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("restored %+v, want %+v", got, want)
	}
	r = state.NewOperatorStore()
	if err := r.Restore(old); err != nil {
		t.Fatal(err)
	}
	var p any
	func() {
		defer func() { p = recover() }()
		state.GetOperatorListState(r, state.ListDescriptor[ruleV2]{Name: "pending", Codec: codec.MustFor[ruleV2]()})
	}()
	if be, ok := p.(*state.BackendError); !ok || !strings.Contains(be.Error(), `"state_test.ruleV1"`) {
		t.Fatalf("another type without a recorded schema: %v, want the codec identity refusal", p)
	}
}

// verCodec is a hand-written int64 codec declaring version v of its format
// (the bytes are the same); version 3 refuses to migrate from 1.
type verCodec struct {
	codec.Codec[int64]
	v int
}

func (c verCodec) Schema() codec.Schema {
	return codec.Schema{Kind: codec.SchemaOpaque, Type: "test.ver", Version: c.v}
}

func (c verCodec) Migrate(old codec.Schema, data []byte) (int64, error) {
	if c.v == 3 {
		return 0, errors.New("no way from " + old.String())
	}
	v, _, err := c.Decode(data)
	return v + 1000, err
}

type verNoMigrate struct{ codec.Codec[int64] }

func (verNoMigrate) Schema() codec.Schema {
	return codec.Schema{Kind: codec.SchemaOpaque, Type: "test.ver", Version: 2}
}

// A declared schema that changed goes through the codec's Migrate; its
// error, or a codec without Migrate, fails the restore permanently.
func TestDeclaredSchemaMigration(t *testing.T) {
	s := state.NewOperatorStore()
	state.GetOperatorListState(s, state.ListDescriptor[int64]{Name: "n", Codec: verCodec{codec.Int64(), 1}}).Update([]int64{1, 2})
	b, _ := s.Snapshot()
	restore := func() *state.OperatorStore {
		r := state.NewOperatorStore()
		if err := r.Restore(b); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if got := state.GetOperatorListState(restore(), state.ListDescriptor[int64]{Name: "n", Codec: verCodec{codec.Int64(), 2}}).Get(); !reflect.DeepEqual(got, []int64{1001, 1002}) {
		t.Fatalf("migrated %v, want [1001 1002]", got)
	}
	if got := state.GetOperatorListState(restore(), state.ListDescriptor[int64]{Name: "n", Codec: verCodec{codec.Int64(), 1}}).Get(); !reflect.DeepEqual(got, []int64{1, 2}) {
		t.Fatalf("same version: %v", got)
	}
	for _, c := range []codec.Codec[int64]{verCodec{codec.Int64(), 3}, verNoMigrate{codec.Int64()}} {
		var p any
		func() {
			defer func() { p = recover() }()
			state.GetOperatorListState(restore(), state.ListDescriptor[int64]{Name: "n", Codec: c})
		}()
		be, ok := p.(*state.BackendError)
		if !ok || !failure.IsPermanent(be) || !strings.Contains(be.Error(), `state "n"`) || !strings.Contains(be.Error(), "test.ver@v1") {
			t.Fatalf("%T: panic %v, want a permanent error naming the state and the old schema", c, p)
		}
	}
}
