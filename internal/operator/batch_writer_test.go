package operator

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/testseed"
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
	seed := testseed.New(t)
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

// seen records what a reader handed on, element by element or in batches.
type seen struct {
	vs      []wpair
	ts      []int64
	batches int
	onBatch func()
}

func (s *seen) ProcessElement(v wpair, ts int64) { s.vs = append(s.vs, v); s.ts = append(s.ts, ts) }
func (s *seen) ProcessWatermark(int64)           {}

type seenBatches struct{ *seen }

func (s seenBatches) ProcessBatch(vs []wpair, ts int64) {
	s.batches++
	for _, v := range vs {
		s.ProcessElement(v, ts)
	}
	if s.onBatch != nil {
		s.onBatch()
	}
}

// TestReaderBatchMatchesElements: a reader whose operator takes batches hands
// on the same records with the same timestamps, in order, as one that hands
// them one by one, over buffers holding records with and without
// timestamps, and stops asked for mid-buffer.
func TestReaderBatchMatchesElements(t *testing.T) {
	seed := testseed.New(t)
	rng := rand.New(rand.NewPCG(seed, 8))
	c := wpairCodec(t)
	for round := range 20 {
		bufSize := []int{64, 70, 100, 1024, 32 << 10}[rng.IntN(5)]
		var bufs [][]byte
		got := drain(t, 1, bufSize, func(w *Writer[wpair]) {
			for range 2000 {
				ts := int64(NoTimestamp)
				if rng.IntN(4) == 0 {
					ts = rng.Int64N(3) // runs of equal timestamps
				}
				w.ProcessElement(wpair{rng.Int64(), rng.Int64()}, ts)
			}
		})
		for _, b := range got[0] {
			if len(b) > 1 {
				bufs = append(bufs, b)
			}
		}
		var one, many seen
		var statsOne, statsMany IOStats
		r1 := NewReader(c, Input[wpair](&one), 1, &statsOne, "one")
		rb := NewReader(c, Input[wpair](seenBatches{&many}), 1, &statsMany, "batches")
		if rb.batch == nil {
			t.Fatal("the reader does not batch")
		}
		stops := 0
		many.onBatch = func() {
			if rng.IntN(5) == 0 {
				statsMany.Yield.Store(true)
			}
		}
		for _, b := range bufs {
			if err := r1.ProcessBuffer(0, b); err != nil {
				t.Fatal(err)
			}
			for pos := 0; pos < len(b); {
				next, err := rb.ProcessFrom(0, b, pos)
				if err != nil {
					t.Fatal(err)
				}
				if next < len(b) {
					if !statsMany.Yield.Load() {
						t.Fatalf("round %d: the reader stopped at %d of %d without a yield", round, next, len(b))
					}
					stops++
				}
				statsMany.Yield.Store(false)
				pos = next
			}
		}
		if len(one.vs) != 2000 || len(many.vs) != len(one.vs) {
			t.Fatalf("round %d: %d records one by one, %d in batches, want 2000", round, len(one.vs), len(many.vs))
		}
		for i := range one.vs {
			if one.vs[i] != many.vs[i] || one.ts[i] != many.ts[i] {
				t.Fatalf("round %d: record %d: batches gave %v at %d, one by one %v at %d", round, i, many.vs[i], many.ts[i], one.vs[i], one.ts[i])
			}
		}
		if statsOne.RecordsIn != 2000 || statsMany.RecordsIn != 2000 {
			t.Fatalf("round %d: records counted %d and %d, want 2000", round, statsOne.RecordsIn, statsMany.RecordsIn)
		}
		if bufSize >= 1024 && many.batches >= len(many.vs) {
			t.Fatalf("round %d: %d batches for %d records", round, many.batches, len(many.vs))
		}
		t.Logf("round %d: buffers of %d, %d batches, %d stops", round, bufSize, many.batches, stops)
	}
}
