package statebackend

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/state"
)

type acctV1 struct {
	N    int64
	Name string
	Gone float64
}

type acctV2 struct {
	Name  string
	Added []int64
	N     int64
}

const schemaMaxPar = 8

func newSchemaBackend(t *testing.T, kind string) Keyed {
	t.Helper()
	k, err := New(Config{Kind: kind, Dir: t.TempDir(), MaxParallelism: schemaMaxPar,
		Range: keygroup.Range{Start: 0, End: schemaMaxPar - 1}, Clock: clock.NewManual(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func setSchemaKey(k Keyed, i int) {
	kb := codec.Int64().AppendEncode(nil, int64(i))
	k.SetCurrentKey(kb, keygroup.ForHash(keygroup.HashBytes(kb), schemaMaxPar))
}

func canonical(t *testing.T, k Keyed, id int64) Source {
	t.Helper()
	p, err := k.Snapshot(id, Canonical)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := p.Materialize(&buf); err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return Source{Canonical: r}
}

const schemaKeys = 50

func writeV1(t *testing.T, kind string) Keyed {
	k := newSchemaBackend(t, kind)
	v := state.GetValueState(k, state.ValueDescriptor[acctV1]{Name: "acct", Codec: codec.MustFor[acctV1]()})
	for i := range schemaKeys {
		setSchemaKey(k, i)
		v.Update(acctV1{N: int64(i) * 3, Name: fmt.Sprint("n", i), Gone: 1.5})
	}
	return k
}

func checkV2(t *testing.T, k Keyed, v state.ValueState[acctV2]) {
	t.Helper()
	for i := range schemaKeys {
		setSchemaKey(k, i)
		got, ok := v.Value()
		if want := (acctV2{Name: fmt.Sprint("n", i), N: int64(i) * 3}); !ok || got.Name != want.Name || got.N != want.N || got.Added != nil {
			t.Fatalf("key %d: %+v %v, want %+v", i, got, ok, want)
		}
	}
}

// A state registered before its restore (the path the runtime does not
// take, but the backends allow) migrates as it restores; the migrated
// state then snapshots under its new schema, canonical and native, and
// restores again without migrating.
func TestSchemaMigrationRestoreAfterRegistration(t *testing.T) {
	for _, kind := range []string{KindHashMap, KindPebble} {
		t.Run(kind, func(t *testing.T) {
			src := canonical(t, writeV1(t, kind), 1)
			k := newSchemaBackend(t, kind)
			d2 := state.ValueDescriptor[acctV2]{Name: "acct", Codec: codec.MustFor[acctV2]()}
			v := state.GetValueState(k, d2)
			if err := k.Restore([]Source{src}); err != nil {
				t.Fatal(err)
			}
			checkV2(t, k, v)
			again := []Source{canonical(t, k, 2)}
			if kind == KindPebble {
				p, err := k.Snapshot(3, Native)
				if err != nil {
					t.Fatal(err)
				}
				h, err := p.Materialize(nil)
				if err != nil {
					t.Fatal(err)
				}
				again = append(again, Source{NativeDir: h.Dir})
			}
			for _, s := range again {
				k2 := newSchemaBackend(t, kind)
				if err := k2.Restore([]Source{s}); err != nil {
					t.Fatal(err)
				}
				checkV2(t, k2, state.GetValueState(k2, d2))
			}
		})
	}
}

// A snapshot from before schemas (format 2: codec identity, no schema)
// restores as it did: the same type restores its values, another type is
// refused naming both codecs.
func TestSnapshotWithoutSchemaRestoresAsBefore(t *testing.T) {
	c1 := codec.MustFor[acctV1]()

	byKG := map[int][]snapshot.Entry{}
	for i := range schemaKeys {
		kb := codec.Int64().AppendEncode(nil, int64(i))
		kg := keygroup.ForHash(keygroup.HashBytes(kb), schemaMaxPar)
		e := snapshot.Entry{Key: kb, Value: c1.AppendEncode(nil, acctV1{N: int64(i), Name: "x"})}
		byKG[kg] = append(byKG[kg], e)
	}
	var buf bytes.Buffer
	meta := snapshot.StateMeta{Name: "acct", Kind: snapshot.KindValue, Codec: "statebackend.acctV1"}
	if _, err := snapshot.Write(&buf, snapshot.Header{MaxParallelism: schemaMaxPar, Range: keygroup.Range{Start: 0, End: schemaMaxPar - 1}},
		[]snapshot.Source{fixedSource{meta, byKG}}); err != nil {
		t.Fatal(err)
	}
	open := func() Source {
		r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		return Source{Canonical: r}
	}
	for _, kind := range []string{KindHashMap, KindPebble} {
		t.Run(kind, func(t *testing.T) {
			k := newSchemaBackend(t, kind)
			if err := k.Restore([]Source{open()}); err != nil {
				t.Fatal(err)
			}
			v := state.GetValueState(k, state.ValueDescriptor[acctV1]{Name: "acct", Codec: c1})
			for i := range schemaKeys {
				setSchemaKey(k, i)
				if got, ok := v.Value(); !ok || got.N != int64(i) || got.Name != "x" {
					t.Fatalf("key %d: %+v %v", i, got, ok)
				}
			}
			k = newSchemaBackend(t, kind)
			if err := k.Restore([]Source{open()}); err != nil {
				t.Fatal(err)
			}
			var p any
			func() {
				defer func() { p = recover() }()
				state.GetValueState(k, state.ValueDescriptor[acctV2]{Name: "acct", Codec: codec.MustFor[acctV2]()})
			}()
			if be, ok := p.(*state.BackendError); !ok || !strings.Contains(be.Error(), `"statebackend.acctV1"`) || !strings.Contains(be.Error(), `"statebackend.acctV2"`) {
				t.Fatalf("another type without a recorded schema: %v", p)
			}
		})
	}
}

type fixedSource struct {
	meta    snapshot.StateMeta
	entries map[int][]snapshot.Entry
}

func (s fixedSource) Meta() snapshot.StateMeta { return s.meta }
func (s fixedSource) KeyGroup(kg int, add func(snapshot.Entry) error) error {
	for _, e := range s.entries[kg] {
		if err := add(e); err != nil {
			return err
		}
	}
	return nil
}
