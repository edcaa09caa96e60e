package statebackend

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/snapshot"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/internal/timers"
)

// TestNativeCheckpointRestoreRescale takes native (incremental) Pebble
// checkpoints of a Pebble cluster and restores them at parallelism 1 to 4:
// the state of every key is as at the checkpoint.
func TestNativeCheckpointRestoreRescale(t *testing.T) {
	s := testseed.New(t)
	rnd := rand.New(rand.NewPCG(s, 7))
	clk := clock.NewManual(5_000)
	orig := newCluster(t, clk, 3, kindsAll(KindPebble))
	orig.open()
	var srcs []Source
	prev := map[string]bool{} // SST names of the previous round, per subtask index
	for round := range 2 {    // the second round is incremental
		for range 2000 {
			orig.step(rnd)
		}
		srcs = srcs[:0]
		for _, h := range orig.subs {
			p, err := h.k.Snapshot(int64(round), Native)
			if err != nil {
				t.Fatal(err)
			}
			hd, err := p.Materialize(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range hd.Files {
				key := fmt.Sprint(hd.Range, f.Name)
				if f.Shared && !prev[key] {
					t.Errorf("file %s marked shared but not in the previous checkpoint", f.Name)
				}
				prev[key] = true
			}
			srcs = append(srcs, Source{NativeDir: hd.Dir})
		}
	}
	atSnap := orig.dump()
	for p := 1; p <= 4; p++ {
		c := newCluster(t, clock.NewManual(clk.NowMillis()), p, kindsAll(KindPebble))
		for _, h := range c.subs {
			if err := h.k.Restore(srcs); err != nil {
				t.Fatal(err)
			}
		}
		c.open()
		if d := c.dump(); d != atSnap {
			t.Fatalf("restored native checkpoints at parallelism %d differ:\nwant\n%s\ngot\n%s", p, atSnap, d)
		}
	}
}

// TestTimersTravelWithState writes keyed state and the timer service into
// one canonical snapshot per subtask, as the runtime does, and restores both
// at another parallelism: the backend ignores the timers and the timer
// service the state.
func TestTimersTravelWithState(t *testing.T) {
	clk := clock.NewManual(0)
	orig := newCluster(t, clk, 2, kindsMixed(rand.New(rand.NewPCG(1, 1))))
	orig.open()
	svcs := []*timers.Service{timers.New(orig.rngs[0]), timers.New(orig.rngs[1])}
	want := map[string]bool{}
	for i, key := range testKeys {
		orig.at(key, "").v.Update(int64(i))
	}
	for i, key := range testKeys {
		h := orig.at(key, "w1")
		h.v.Update(int64(i))
		for j, svc := range svcs {
			if orig.rngs[j].Contains(keyGroupOf(key)) {
				svc.SetCurrentKey(encodedKey(key), keyGroupOf(key))
				svc.SetCurrentNamespace([]byte("w1"))
				svc.RegisterEventTime(int64(100 + i))
				want[fmt.Sprintf("%s@%d", key, 100+i)] = true
			}
		}
	}
	var readers []*snapshot.Reader
	for i, h := range orig.subs {
		p, err := h.k.Snapshot(1, Canonical)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := p.Materialize(&buf, svcs[i].Snapshot()...); err != nil {
			t.Fatal(err)
		}
		r, err := snapshot.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	atSnap := orig.dump()
	c := newCluster(t, clk, 3, kindsMixed(rand.New(rand.NewPCG(2, 2))))
	got := map[string]bool{}
	for i, h := range c.subs {
		svc := timers.New(c.rngs[i])
		var srcs []Source
		for _, r := range readers {
			srcs = append(srcs, Source{Canonical: r})
			if err := svc.Restore(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.k.Restore(srcs); err != nil {
			t.Fatal(err)
		}
		svc.AdvanceWatermark(1<<40, func(tm timers.Timer) {
			k, _, _ := codec.String().Decode(tm.Key)
			got[fmt.Sprintf("%s@%d", k, tm.Timestamp)] = true
		})
	}
	c.open()
	if d := c.dump(); d != atSnap {
		t.Fatalf("state differs after restore")
	}
	if len(got) != len(want) || len(want) != len(testKeys) {
		t.Fatalf("timers: got %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("timer %s lost", k)
		}
	}
}

// encodedKey is codec.String's encoding of a short key, as the harness uses.
func encodedKey(key string) []byte { return codec.String().AppendEncode(nil, key) }

func keyGroupOf(key string) int {
	return keygroup.ForHash(keygroup.HashBytes(encodedKey(key)), testMaxPar)
}
