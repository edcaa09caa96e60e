package operator

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/testseed"
)

// event is one thing a channel carries: a record, a watermark or its end.
type event struct {
	kind network.Kind
	val  []byte // record payload (nil and empty are different)
	ts   int64  // record timestamp, or the watermark
}

func (e event) String() string {
	switch e.kind {
	case network.KindData:
		return fmt.Sprintf("record(nil=%v len=%d %.16x ts=%d)", e.val == nil, len(e.val), e.val, e.ts)
	case network.KindWatermark:
		return fmt.Sprintf("watermark(%d)", e.ts)
	}
	return e.kind.String()
}

func (e event) equal(o event) bool {
	return e.kind == o.kind && e.ts == o.ts && (e.val == nil) == (o.val == nil) && bytes.Equal(e.val, o.val)
}

// recorder is the consuming operator: it records what each channel delivered.
// The reader does not say which channel a record came from, so the consumer
// loop sets ch before each ProcessBuffer.
type recorder struct {
	ch  int
	got [][]event
}

func (r *recorder) ProcessElement(v []byte, ts int64) {
	r.got[r.ch] = append(r.got[r.ch], event{kind: network.KindData, val: v, ts: ts})
}
func (r *recorder) ProcessWatermark(int64) { panic("the test passes watermarks per channel itself") }

type rtConfig struct {
	producers, subs int // producers, each with a partition of subs subpartitions
	bufSize, pool   int
	credits         int
	records         int
	selector        string // "random", "roundrobin", "skewed", "broadcast"
	maxRecord       int
}

func TestWriterReaderRoundTrip(t *testing.T) {
	seed := testseed.New(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	records := 1500
	if testing.Short() {
		records = 200
	}
	for trial, sel := range []string{"random", "roundrobin", "skewed", "broadcast", "random", "broadcast", "random", "skewed"} {
		cfg := rtConfig{
			producers: 1 + rng.IntN(3),
			subs:      1 + rng.IntN(4),
			bufSize:   []int{64, 128, 256}[rng.IntN(3)],
			credits:   1 + rng.IntN(3),
			records:   records,
			selector:  sel,
		}
		// The writer may hold one partly filled buffer per subpartition, so
		// the pool needs one more than that to make progress.
		cfg.pool = cfg.subs + 1 + rng.IntN(4)
		cfg.maxRecord = cfg.bufSize * (1 + rng.IntN(6))
		t.Run(fmt.Sprintf("%d-%s", trial, sel), func(t *testing.T) {
			t.Logf("%+v", cfg)
			runRoundTrip(t, cfg, rng.Uint64())
		})
	}
}

func runRoundTrip(t *testing.T, cfg rtConfig, seed uint64) {
	gate := network.NewInputGate()
	channels := cfg.producers * cfg.subs
	want := make([][]event, channels)
	type producer struct {
		rp     *network.ResultPartition
		script []func(w *Writer[[]byte])
		stats  IOStats
	}
	prods := make([]*producer, cfg.producers)
	rng := rand.New(rand.NewPCG(seed, 2))
	for p := range prods {
		pr := &producer{rp: network.NewResultPartition(cfg.subs, network.NewBufferPool(cfg.pool, cfg.bufSize))}
		prods[p] = pr
		for s := range cfg.subs {
			network.Connect(pr.rp.Subs[s], gate, 0, p*cfg.subs+s, cfg.credits)
		}
	}
	// Build each producer's script and, beside it, what every channel must see.
	var choices [][]int // per producer: the channel of each record
	for p, pr := range prods {
		var ch []int
		rr := 0
		for i := range cfg.records {
			switch n := rng.IntN(100); {
			case n < 3:
				wm := rng.Int64N(1<<40) + int64(i)
				for s := range cfg.subs {
					want[p*cfg.subs+s] = append(want[p*cfg.subs+s], event{kind: network.KindWatermark, ts: wm})
				}
				pr.script = append(pr.script, func(w *Writer[[]byte]) { w.ProcessWatermark(wm) })
			case n < 6:
				pr.script = append(pr.script, func(w *Writer[[]byte]) { w.Flush() })
			}
			var v []byte
			switch k := rng.IntN(20); {
			case k == 0:
				v = nil
			case k == 1:
				v = []byte{}
			case k < 12:
				v = randBytes(rng, rng.IntN(40))
			default:
				v = randBytes(rng, rng.IntN(cfg.maxRecord+1))
			}
			ts := int64(NoTimestamp)
			if rng.IntN(2) == 0 {
				ts = []int64{0, -1, math.MaxInt64, math.MinInt64 + 1, rng.Int64()}[rng.IntN(5)]
			}
			targets := []int{}
			switch cfg.selector {
			case "random":
				targets = append(targets, rng.IntN(cfg.subs))
			case "roundrobin":
				targets = append(targets, rr%cfg.subs)
				rr++
			case "skewed":
				c := 0
				if rng.IntN(10) == 0 {
					c = rng.IntN(cfg.subs)
				}
				targets = append(targets, c)
			case "broadcast":
				for s := range cfg.subs {
					targets = append(targets, s)
				}
			}
			if cfg.selector != "broadcast" {
				ch = append(ch, targets[0])
			}
			for _, s := range targets {
				want[p*cfg.subs+s] = append(want[p*cfg.subs+s], event{kind: network.KindData, val: v, ts: ts})
			}
			pr.script = append(pr.script, func(w *Writer[[]byte]) { w.ProcessElement(v, ts) })
		}
		for s := range cfg.subs {
			want[p*cfg.subs+s] = append(want[p*cfg.subs+s], event{kind: network.KindEndOfPartition})
		}
		pr.script = append(pr.script, func(w *Writer[[]byte]) { w.EndOfPartition() })
		choices = append(choices, ch)
	}

	cancel := make(chan struct{})
	crashed := make(chan any, cfg.producers)
	var wg sync.WaitGroup
	for p, pr := range prods {
		var sel func([]byte) int
		if cfg.selector != "broadcast" {
			i := 0
			sel = func([]byte) int { c := choices[p][i]; i++; return c }
		}
		w := NewWriter(codec.Bytes(), pr.rp, sel, cancel, &pr.stats)
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil && r != network.ErrCanceled {
					crashed <- fmt.Sprintf("producer %d panicked: %v", p, r)
				}
			}()
			for _, step := range pr.script {
				step(w)
			}
		})
	}
	defer func() { close(cancel); wg.Wait() }()

	rec := &recorder{got: make([][]event, channels)}
	var rstats IOStats
	reader := NewReader(codec.Bytes(), Input[[]byte](rec), channels, &rstats, "roundtrip")
	crng := rand.New(rand.NewPCG(seed, 3))
	var held []*network.Buffer
	var heldCh []*network.InputChannel
	// Data buffers go back to their pool and return a credit; events cost neither.
	release := func(b *network.Buffer, c *network.InputChannel) {
		if !b.IsEvent() {
			b.Recycle()
			c.ReturnCredit()
		}
	}
	live := channels
	deadline := time.After(30 * time.Second)
	for live > 0 {
		c, b, ok := gate.Poll()
		if !ok {
			for i := range held {
				release(held[i], heldCh[i])
			}
			held, heldCh = held[:0], heldCh[:0]
			select {
			case <-gate.Notify():
			case r := <-crashed:
				t.Fatal(r)
			case <-deadline:
				t.Fatalf("stuck with %d channels live", live)
			}
			continue
		}
		switch b.Kind {
		case network.KindData:
			rec.ch = c.Channel
			if err := reader.ProcessBuffer(c.Channel, b.Data); err != nil {
				t.Fatal(err)
			}
		case network.KindWatermark:
			rec.got[c.Channel] = append(rec.got[c.Channel], event{kind: network.KindWatermark, ts: b.Watermark()})
		case network.KindEndOfPartition:
			if err := reader.ChannelEnded(c.Channel); err != nil {
				t.Fatal(err)
			}
			rec.got[c.Channel] = append(rec.got[c.Channel], event{kind: network.KindEndOfPartition})
			live--
		}
		// Sometimes keep a buffer a while: it holds credit and pool space.
		if crng.IntN(4) == 0 {
			held, heldCh = append(held, b), append(heldCh, c)
			continue
		}
		release(b, c)
	}
	for i := range held {
		release(held[i], heldCh[i])
	}
	wg.Wait()

	for ch := range channels {
		// A watermark queued right behind another replaces it (the network
		// keeps events bounded), so only the last of a run counts.
		got, exp := lastOfWatermarkRuns(rec.got[ch]), lastOfWatermarkRuns(want[ch])
		for i := range min(len(got), len(exp)) {
			if !got[i].equal(exp[i]) {
				t.Fatalf("channel %d event %d: got %v, want %v", ch, i, got[i], exp[i])
			}
		}
		if len(got) != len(exp) {
			t.Fatalf("channel %d: %d events, want %d", ch, len(got), len(exp))
		}
	}
	var out int64
	for p, pr := range prods {
		out += pr.stats.RecordsOut
		if n := pr.rp.Pool.InUse(); n != 0 {
			t.Errorf("producer %d: %d buffers not returned to the pool", p, n)
		}
		if pr.rp.Pool.MaxInUse() > pr.rp.Pool.Capacity() {
			t.Errorf("producer %d: pool overdrawn", p)
		}
	}
	if int(out) != cfg.producers*cfg.records {
		t.Errorf("writers counted %d records out, want %d", out, cfg.producers*cfg.records)
	}
	if c, _, ok := gate.Poll(); ok {
		t.Fatalf("extra buffer on channel %d after end of partition", c.Channel)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// lastOfWatermarkRuns keeps, of every run of consecutive watermarks, the last.
func lastOfWatermarkRuns(evs []event) []event {
	var out []event
	for i, e := range evs {
		if e.kind == network.KindWatermark && i+1 < len(evs) && evs[i+1].kind == network.KindWatermark {
			continue
		}
		out = append(out, e)
	}
	return out
}
