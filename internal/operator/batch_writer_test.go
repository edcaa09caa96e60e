package operator

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
)

type wpair struct{ A, B int64 }

func wpairCodec(t testing.TB) codec.Codec[wpair] {
	c, err := codec.For[wpair]()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.MemorySize(c); !ok {
		t.Fatal("wpair's codec is not its memory: the test would not reach the batch path")
	}
	return c
}

// drain writes with write into a fresh partition of subs channels and
// returns what each channel received: its data buffers' bytes in order,
// one entry per buffer, and event kinds as single-byte markers.
func drain(t *testing.T, subs, bufSize int, write func(w *Writer[wpair])) [][][]byte {
	t.Helper()
	rp := network.NewResultPartition(subs, network.NewBufferPool(4096, bufSize))
	gate := network.NewInputGate()
	for s := range subs {
		network.Connect(rp.Subs[s], gate, 0, s, 1<<20)
	}
	var stats IOStats
	w := NewWriter(wpairCodec(t), rp, func(p wpair) int { return int(uint64(p.A) % uint64(subs)) }, nil, &stats)
	w.selBatch = func(vs []wpair, chs []int32) {
		for i, p := range vs {
			chs[i] = int32(uint64(p.A) % uint64(subs))
		}
	}
	write(w)
	w.EndOfPartition()
	got := make([][][]byte, subs)
	for {
		c, b, ok := gate.Poll()
		if !ok {
			break
		}
		if b.IsEvent() {
			got[c.Channel] = append(got[c.Channel], []byte{byte(b.Kind)})
		} else {
			got[c.Channel] = append(got[c.Channel], bytes.Clone(b.Data))
			b.Recycle()
		}
	}
	if stats.RecordsOut == 0 {
		t.Fatal("no records counted")
	}
	return got
}

// TestWriterBatchMatchesElements: a writer fed batches (keys routed first,
// then appended) puts the same bytes into the same buffers of the same
// channels as one fed the same records one by one, across buffer ends,
// timestamps, watermarks and flushes.
func TestWriterBatchMatchesElements(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	for round := range 20 {
		subs := 1 + rng.IntN(4)
		bufSize := []int{64, 70, 100, 1024, 32 << 10}[rng.IntN(5)]
		type step struct {
			vs    []wpair
			ts    int64
			wm    int64 // > 0: a watermark instead of a batch
			flush bool
		}
		var script []step
		for range 200 {
			switch rng.IntN(20) {
			case 0:
				script = append(script, step{wm: 1 + rng.Int64N(1000)})
				continue
			case 1:
				script = append(script, step{flush: true})
				continue
			}
			vs := make([]wpair, rng.IntN(70))
			for i := range vs {
				vs[i] = wpair{rng.Int64(), rng.Int64()}
			}
			ts := int64(NoTimestamp)
			if rng.IntN(3) == 0 {
				ts = rng.Int64()
			}
			script = append(script, step{vs: vs, ts: ts})
		}
		run := func(batch bool) func(w *Writer[wpair]) {
			return func(w *Writer[wpair]) {
				for _, s := range script {
					switch {
					case s.wm > 0:
						w.ProcessWatermark(s.wm)
					case s.flush:
						w.Flush()
					case batch:
						w.ProcessBatch(s.vs, s.ts)
					default:
						for _, v := range s.vs {
							w.ProcessElement(v, s.ts)
						}
					}
				}
			}
		}
		want := drain(t, subs, bufSize, run(false))
		got := drain(t, subs, bufSize, run(true))
		for ch := range want {
			if len(got[ch]) != len(want[ch]) {
				t.Fatalf("round %d (subs %d, buffers of %d): channel %d got %d buffers, want %d", round, subs, bufSize, ch, len(got[ch]), len(want[ch]))
			}
			for i := range want[ch] {
				if !bytes.Equal(got[ch][i], want[ch][i]) {
					t.Fatalf("round %d (subs %d, buffers of %d): channel %d buffer %d differs:\n got %x\nwant %x", round, subs, bufSize, ch, i, got[ch][i], want[ch][i])
				}
			}
		}
	}
}
