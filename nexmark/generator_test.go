package nexmark

import (
	"math"
	"sync"
	"testing"

	"github.com/weirhq/weir/internal/cpumeter"
	"github.com/weirhq/weir/internal/testseed"
)

func mustGenerator(t testing.TB, cfg Config) *Generator {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// size is Nexmark's estimate of an event's bytes (8 per number plus the
// string lengths, as its generators count when padding with extra).
func size(e *Event) int {
	switch e.Type {
	case PersonEvent:
		p := &e.Person
		return 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State) + len(p.Extra)
	case AuctionEvent:
		a := &e.Auction
		return 8 + len(a.ItemName) + len(a.Description) + 40 + len(a.Extra)
	}
	return 32 + len(e.Bid.Extra)
}

// TestStatistics checks the generator's statistics against Nexmark's
// configuration: the exact mix per 50 event ids, average sizes, hot
// ratios, ids, auction lengths.
func TestStatistics(t *testing.T) {
	cfg := DefaultConfig()
	const n = 500_000
	g := mustGenerator(t, cfg)
	var e Event
	var count [3]int
	var bytes [3]int
	var hotAuction, hotSeller, hotBidder, auctions, bids int
	// The first event is id 2 (FirstEventID 1 + FirstEventNumber 1): the
	// first auction is 1001, the first person (id 50) 1001.
	lastPerson, lastAuction := int64(firstPersonID), int64(firstAuctionID)
	for i := int64(0); i < n; i++ {
		g.Event(i, &e)
		id := g.EventID(i)
		want := BidEvent
		switch r := id % 50; {
		case r == 0:
			want = PersonEvent
		case r <= 3:
			want = AuctionEvent
		}
		if e.Type != want {
			t.Fatalf("event %d (id %d) is a %v, want a %v", i, id, e.Type, want)
		}
		count[e.Type]++
		bytes[e.Type] += size(&e)
		switch e.Type {
		case PersonEvent:
			if e.Person.ID != lastPerson+1 {
				t.Fatalf("event %d: person %d after %d", i, e.Person.ID, lastPerson)
			}
			lastPerson = e.Person.ID
		case AuctionEvent:
			a := &e.Auction
			if a.ID != lastAuction+1 {
				t.Fatalf("event %d: auction %d after %d", i, a.ID, lastAuction)
			}
			lastAuction = a.ID
			auctions++
			if a.Seller == g.lastBase0PersonID(id)/hotGroup*hotGroup+firstPersonID {
				hotSeller++
			}
			if a.Seller > lastPerson+personIDLead || a.Category < 10 || a.Category > 14 || a.Reserve < a.InitialBid || a.Expires <= a.DateTime {
				t.Fatalf("event %d: bad auction %+v (last person %d)", i, a, lastPerson)
			}
		case BidEvent:
			b := &e.Bid
			bids++
			if b.Auction == g.lastBase0AuctionID(id)/hotGroup*hotGroup+firstAuctionID {
				hotAuction++
			}
			// Nexmark adds FIRST_PERSON_ID twice to bidders.
			if b.Bidder == g.lastBase0PersonID(id)/hotGroup*hotGroup+1+2*firstPersonID {
				hotBidder++
			}
			if b.Auction > lastAuction+auctionIDLead || b.Auction < lastAuction-int64(cfg.NumInFlightAuctions) && b.Auction%hotGroup != 0 ||
				b.Price < 100 || b.Price > 100_000_000 || b.Channel == "" || b.URL == "" {
				t.Fatalf("event %d: bad bid %+v (last auction %d)", i, b, lastAuction)
			}
		}
	}
	if count[PersonEvent]*50 != n || count[AuctionEvent]*50 != 3*n || count[BidEvent]*50 != 46*n {
		t.Errorf("mix %v in %d events, want 1:3:46", count, n)
	}
	for typ, avg := range map[EventType]int{PersonEvent: 200, AuctionEvent: 500, BidEvent: 100} {
		got := float64(bytes[typ]) / float64(count[typ])
		if math.Abs(got-float64(avg)) > 0.01*float64(avg) {
			t.Errorf("average %v size %.1f, want %d within 1%%", typ, got, avg)
		}
	}
	// A hot one with probability 1-1/ratio, plus the odd random pick of it.
	for _, c := range []struct {
		what       string
		hot, of    int
		ratio      int
		randomPick float64
	}{
		{"auction of bids", hotAuction, bids, cfg.HotAuctionRatio, 1.0 / 111},
		{"seller of auctions", hotSeller, auctions, cfg.HotSellersRatio, 1.0 / 1010},
		{"bidder of bids", hotBidder, bids, cfg.HotBiddersRatio, 1.0 / 1010},
	} {
		p := 1 - 1/float64(c.ratio)
		want := p + (1-p)*c.randomPick
		got := float64(c.hot) / float64(c.of)
		if math.Abs(got-want) > 0.01 {
			t.Errorf("hot %s: %.4f, want %.4f", c.what, got, want)
		}
	}
}

// TestEventTime checks the synthetic event time: spaced by 1e6/tps
// microseconds from the base time, monotone without out-of-order groups,
// and within its group's bounds with them.
func TestEventTime(t *testing.T) {
	for _, tps := range []int64{1, 7, 1000, 3333, 1_000_000, DefaultEventsPerSecond} {
		cfg := DefaultConfig()
		cfg.EventsPerSecond = tps
		g := mustGenerator(t, cfg)
		var e Event
		prev := int64(math.MinInt64)
		for n := int64(0); n < 20_000; n++ {
			g.Event(n, &e)
			// Event number n+1 (FirstEventNumber 1) at (n+1)*1e6/tps µs.
			want := cfg.BaseTime + int64(float64(n+1)*(1e6/float64(tps)))/1000
			if e.DateTime() != want || e.DateTime() < prev {
				t.Fatalf("tps %d: event %d at %d, want %d (previous %d)", tps, n, e.DateTime(), want, prev)
			}
			prev = e.DateTime()
		}
		// The rate over the whole run.
		last := g.Timestamp(1_000_000 - 1)
		if span, want := last-cfg.BaseTime, 1_000_000*1000/tps; math.Abs(float64(span-want)) > 1 {
			t.Errorf("tps %d: a million events span %d ms, want %d", tps, span, want)
		}
	}
	cfg := DefaultConfig()
	cfg.EventsPerSecond, cfg.OutOfOrderGroupSize = 1000, 17
	g := mustGenerator(t, cfg)
	seen := map[int64]bool{}
	maxSoFar := cfg.BaseTime
	const n = 17 * 500
	for i := int64(0); i < n; i++ {
		ts, wm := g.Timestamp(i), g.WatermarkTimestamp(i)
		if ts < wm || wm > g.WatermarkTimestamp(i+1) {
			t.Fatalf("event %d at %d is before its watermark %d, or the watermark goes back", i, ts, wm)
		}
		// Out of order by less than a group.
		if maxSoFar-ts >= 17 {
			t.Fatalf("event %d at %d is %d ms behind the latest", i, ts, maxSoFar-ts)
		}
		maxSoFar = max(maxSoFar, ts)
		seen[g.EventID(i)] = true
	}
	if len(seen) != n {
		t.Fatalf("out-of-order groups repeat event ids: %d distinct of %d", len(seen), n)
	}
}

// TestDeterministic checks that an event depends only on the config and
// its number: two generators, any order, agree; another seed changes the
// events but not their mix or times.
func TestDeterministic(t *testing.T) {
	rng := testseed.Rand(t, 0)
	cfg := DefaultConfig()
	a, b := mustGenerator(t, cfg), mustGenerator(t, cfg)
	other := cfg
	other.Seed = 1 + rng.Uint64N(1<<40)
	c := mustGenerator(t, other)
	var ea, eb, ec Event
	same := 0
	for range 20_000 {
		n := rng.Int64N(1 << 40)
		a.Event(n, &ea)
		b.Event(n+1, &eb) // another event first: no state carries over
		b.Event(n, &eb)
		if ea != eb {
			t.Fatalf("event %d differs between generators:\n%+v\n%+v", n, ea, eb)
		}
		c.Event(n, &ec)
		if ec.Type != ea.Type || ec.DateTime() != ea.DateTime() {
			t.Fatalf("seed %d changes the type or time of event %d", other.Seed, n)
		}
		if ec == ea {
			same++
		}
	}
	if same > 100 {
		t.Errorf("seed %d leaves %d of 20000 events unchanged", other.Seed, same)
	}
}

// TestGeneratorAllocs checks that bids allocate nothing and people and
// auctions only their share of an arena block.
func TestGeneratorAllocs(t *testing.T) {
	g := mustGenerator(t, DefaultConfig())
	var e Event
	n := int64(0)
	allocs := testing.AllocsPerRun(10_000, func() {
		g.Event(n, &e)
		n++
	})
	if allocs > 0.01 {
		t.Errorf("%.3f allocations per event, want amortized ~0", allocs)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.EventsPerSecond = 0 }, "EventsPerSecond must be positive"},
		{func(c *Config) { c.Events = -1 }, "Events must be 0"},
		{func(c *Config) { c.BidProportion = 0 }, "BidProportion must be positive"},
		{func(c *Config) { c.OutOfOrderGroupSize = 0 }, "OutOfOrderGroupSize must be positive"},
		{func(c *Config) { c.AvgAuctionByteSize = 1 << 20 }, "at most"},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg)
		_, err := NewGenerator(cfg)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
	if _, err := NewGenerator(Config{}); err == nil {
		t.Error("the zero Config was accepted")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// BenchmarkGenerator is the bare generator without the engine: events per
// CPU second into nothing (each event is overwritten by the next).
func BenchmarkGenerator(b *testing.B) {
	g := mustGenerator(b, DefaultConfig())
	var e Event
	b.ReportAllocs()
	start := cpumeter.Now()
	for n := range int64(b.N) {
		g.Event(n, &e)
	}
	cpumeter.Report(b, int64(b.N), start)
}

// BenchmarkSharedTables is building the shared tables (the 1 MiB padding
// string, 10,004 URLs), which every process pays once.
func BenchmarkSharedTables(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sharedOnce = sync.Once{}
		shared()
	}
}
