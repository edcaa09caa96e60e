package query

import (
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// BenchmarkQ16State replays the state accesses of q16's aggregation for
// the bids of 2 M generated events on one heap backend (one subtask's
// state, no engine around it), from an empty state each time: ns per bid.
// It isolates what the query's end-to-end runs measure through a shared
// machine's noise.
func BenchmarkQ16State(b *testing.B) {
	cfg := nexmark.DefaultConfig()
	cfg.Events = 2_000_000
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		b.Fatal(err)
	}
	type bid struct {
		key []byte
		kg  int
		b   q16Bid
	}
	var bids []bid
	var e nexmark.Event
	for n := range cfg.Events {
		g.Event(n, &e)
		if e.Type != nexmark.BidEvent {
			continue
		}
		k := p1Q16Key(e.Bid.Channel, qeDay(e.Bid.DateTime))
		kb := []byte(k)
		bids = append(bids, bid{kb, keygroup.ForHash(keygroup.HashString(k), 128),
			q16Bid{Key: k, Bid: qeBid{Auction: e.Bid.Auction, Bidder: e.Bid.Bidder, Price: e.Bid.Price, DateTime: e.Bid.DateTime}}})
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		k, err := statebackend.New(statebackend.Config{MaxParallelism: 128, Range: keygroup.Range{Start: 0, End: 127}, Clock: clock.NewManual(0)})
		if err != nil {
			b.Fatal(err)
		}
		accs := state.GetValueState(k, state.ValueDescriptor[q16Acc]{Name: "accumulator", Codec: codec.MustFor[q16Acc]()})
		agg := new(q16Agg)
		agg.open(k)
		b.StartTimer()
		for i := range bids {
			k.SetCurrentKey(bids[i].key, bids[i].kg)
			agg.read(bids[i].b) // as qeDailyAgg.ProcessElement
			prev, _ := accs.Value()
			if acc := agg.add(prev, bids[i].b); acc != prev {
				accs.Update(acc)
			}
		}
		b.StopTimer()
		k.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bids)), "ns/bid")
}
