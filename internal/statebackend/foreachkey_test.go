package statebackend

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

// TestForEachKey writes random value, list and map state, some of it in a
// namespace and some deleted again, on both backends and over half the key
// groups, and checks that ForEachKey yields exactly the keys that hold each
// state in no namespace (kept in a plain map beside), with their key
// groups, each once; then that fn may clear every key's state while it
// runs, after which no key is left.
func TestForEachKey(t *testing.T) {
	rnd := testseed.Rand(t, 44)
	const maxPar = 64
	rng := keygroup.Range{Start: 16, End: 47}
	type op struct {
		key, ns string
		state   int // 0 value, 1 list, 2 map
		del     bool
	}
	var ops []op
	for range 3000 {
		var key string
		for {
			key = fmt.Sprintf("k%d", rnd.IntN(600))
			if rng.Contains(keygroup.ForHash(keygroup.HashBytes([]byte(key)), maxPar)) {
				break
			}
		}
		ns := ""
		if rnd.IntN(4) == 0 {
			ns = "w1"
		}
		ops = append(ops, op{key: key, ns: ns, state: rnd.IntN(3), del: rnd.IntN(5) == 0})
	}
	want := [3]map[string]bool{{}, {}, {}}
	for _, o := range ops {
		if o.ns == "" {
			want[o.state][o.key] = !o.del
		}
	}
	for _, kind := range []string{KindHashMap, KindPebble} {
		t.Run(kind, func(t *testing.T) {
			k, err := New(Config{Kind: kind, Dir: t.TempDir(), MaxParallelism: maxPar, Range: rng, Clock: clock.NewManual(0)})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			v := state.GetValueState(k, state.ValueDescriptor[int64]{Name: "v", Codec: codec.Int64()})
			l := state.GetListState(k, state.ListDescriptor[int64]{Name: "l", Codec: codec.Int64()})
			m := state.GetMapState(k, state.MapDescriptor[int64, int64]{Name: "m", UserKeyCodec: codec.Int64(), ValueCodec: codec.Int64()})
			clears := []func(){v.Clear, l.Clear, m.Clear}
			for i, o := range ops {
				b := []byte(o.key)
				k.SetCurrentKey(b, keygroup.ForHash(keygroup.HashBytes(b), maxPar))
				k.SetCurrentNamespace([]byte(o.ns))
				switch {
				case o.del:
					clears[o.state]()
				case o.state == 0:
					v.Update(int64(i))
				case o.state == 1:
					l.Add(int64(i))
				default:
					m.Put(int64(i%7), int64(i))
				}
			}
			k.SetCurrentNamespace(nil)
			for i, name := range []string{"v", "l", "m"} {
				got := map[string]bool{}
				err := k.ForEachKey(name, func(key []byte, kg int) error {
					if got[string(key)] {
						t.Fatalf("state %s: key %s twice", name, key)
					}
					if w := keygroup.ForHash(keygroup.HashBytes(key), maxPar); kg != w {
						t.Fatalf("state %s: key %s in key group %d, want %d", name, key, kg, w)
					}
					got[string(key)] = true
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				var wantKeys []string
				for key, live := range want[i] {
					if live {
						wantKeys = append(wantKeys, key)
					}
				}
				if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(slices.Values(wantKeys)); !slices.Equal(g, w) {
					t.Fatalf("state %s: %d keys, want %d:\n got %v\nwant %v", name, len(g), len(w), g, w)
				}
				n := 0
				if err := k.ForEachKey(name, func(key []byte, kg int) error { k.SetCurrentKey(key, kg); clears[i](); n++; return nil }); err != nil {
					t.Fatal(err)
				}
				if n != len(wantKeys) {
					t.Fatalf("state %s: cleared %d keys, want %d", name, n, len(wantKeys))
				}
				if err := k.ForEachKey(name, func(key []byte, _ int) error { return fmt.Errorf("key %s left after clearing", key) }); err != nil {
					t.Fatalf("state %s: %v", name, err)
				}
			}
			if err := k.ForEachKey("unknown", func([]byte, int) error { return fmt.Errorf("a key of an unknown state") }); err != nil {
				t.Fatal(err)
			}
		})
	}
}
