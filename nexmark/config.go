package nexmark

import (
	"errors"
	"fmt"
	"math"
)

// DefaultBaseTime is the event time of event number 0 unless Config says
// otherwise: 2026-01-01T00:00:00Z. Nexmark takes the wall clock when the
// job is created; Weir fixes it so that a seed gives the same events on
// every run.
const DefaultBaseTime = 1767225600000

// DefaultEventsPerSecond is the event-time rate of the Nexmark benchmark
// suite (nexmark.yaml's tps: 10,000,000 events per second of event time).
// NexmarkConfiguration's own default, 10,000, is what the suite overrides.
const DefaultEventsPerSecond = 10_000_000

// Config is Nexmark's NexmarkConfiguration and GeneratorConfig for one
// stream of events, as the Flink Nexmark table source builds it (first
// event id 1, first event number 1, one generator). Start from
// DefaultConfig and change what you need; Validate says what is wrong.
type Config struct {
	// Events is how many events the stream holds; 0 means without end
	// (Nexmark's numEvents).
	Events int64
	// EventsPerSecond spaces event times: event number n happens at
	// BaseTime + n * 1e6/EventsPerSecond microseconds, truncated to ms
	// (Nexmark's firstEventRate with numEventGenerators 1).
	EventsPerSecond int64
	// Seed 0 gives Nexmark's own events: each event's fields come from a
	// java.util.Random seeded with its event id. Another seed is mixed into
	// that per-event seed, for a different stream with the same
	// statistics.
	Seed uint64
	// BaseTime is the event time of event number 0, epoch ms.
	BaseTime int64
	// FirstEventID and FirstEventNumber are GeneratorConfig's: the Flink
	// table source uses 1 and 1, so the first event is number 1 with id 2.
	FirstEventID, FirstEventNumber int64

	// The mix: out of every PersonProportion + AuctionProportion +
	// BidProportion consecutive event ids, the first are people, then
	// auctions, then bids (1, 3, 46).
	PersonProportion, AuctionProportion, BidProportion int
	// Average sizes in bytes that the extra field pads events to, with
	// Nexmark's size estimate (8 per number plus string lengths).
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int
	// A bid goes to a hot auction (the first of the last 100 auctions)
	// with probability 1 - 1/HotAuctionRatio, an auction has a hot seller
	// with 1 - 1/HotSellersRatio, a bid a hot bidder with 1 -
	// 1/HotBiddersRatio (2, 4, 4).
	HotAuctionRatio, HotSellersRatio, HotBiddersRatio int
	// Other auctions and people are drawn from the last NumInFlightAuctions
	// auctions and NumActivePeople people (100, 1000).
	NumInFlightAuctions, NumActivePeople int
	// OutOfOrderGroupSize > 1 permutes event ids and times within groups
	// of that many consecutive events (1: in order).
	OutOfOrderGroupSize int64
}

// DefaultConfig is Nexmark's configuration as the Flink benchmark runs it,
// at DefaultEventsPerSecond, without end.
func DefaultConfig() Config {
	return Config{
		EventsPerSecond:     DefaultEventsPerSecond,
		BaseTime:            DefaultBaseTime,
		FirstEventID:        1,
		FirstEventNumber:    1,
		PersonProportion:    1,
		AuctionProportion:   3,
		BidProportion:       46,
		AvgPersonByteSize:   200,
		AvgAuctionByteSize:  500,
		AvgBidByteSize:      100,
		HotAuctionRatio:     2,
		HotSellersRatio:     4,
		HotBiddersRatio:     4,
		NumInFlightAuctions: 100,
		NumActivePeople:     1000,
		OutOfOrderGroupSize: 1,
	}
}

// Validate reports the first setting Nexmark's generator cannot work with.
func (c Config) Validate() error {
	pos := []struct {
		name string
		v    int64
	}{
		{"EventsPerSecond", c.EventsPerSecond},
		{"PersonProportion", int64(c.PersonProportion)},
		{"AuctionProportion", int64(c.AuctionProportion)},
		{"BidProportion", int64(c.BidProportion)},
		{"HotAuctionRatio", int64(c.HotAuctionRatio)},
		{"HotSellersRatio", int64(c.HotSellersRatio)},
		{"HotBiddersRatio", int64(c.HotBiddersRatio)},
		{"NumInFlightAuctions", int64(c.NumInFlightAuctions)},
		{"NumActivePeople", int64(c.NumActivePeople)},
		{"OutOfOrderGroupSize", c.OutOfOrderGroupSize},
	}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("nexmark: %s must be positive, got %d (start from DefaultConfig)", p.name, p.v)
		}
	}
	switch {
	case c.Events < 0:
		return fmt.Errorf("nexmark: Events must be 0 (without end) or positive, got %d", c.Events)
	case c.FirstEventID < 0 || c.FirstEventNumber < 0:
		return fmt.Errorf("nexmark: FirstEventID and FirstEventNumber must not be negative, got %d and %d", c.FirstEventID, c.FirstEventNumber)
	case c.AvgPersonByteSize < 0 || c.AvgAuctionByteSize < 0 || c.AvgBidByteSize < 0:
		return errors.New("nexmark: average sizes must not be negative")
	case c.AvgPersonByteSize > maxAvgSize || c.AvgAuctionByteSize > maxAvgSize || c.AvgBidByteSize > maxAvgSize:
		return fmt.Errorf("nexmark: average sizes must be at most %d bytes", maxAvgSize)
	case int64(c.PersonProportion)+int64(c.AuctionProportion)+int64(c.BidProportion) > math.MaxInt32:
		return errors.New("nexmark: the proportions add up to more than 2^31-1")
	case int64(c.NumActivePeople)+personIDLead >= math.MaxInt32 || int64(c.NumInFlightAuctions)+auctionIDLead >= math.MaxInt32:
		return errors.New("nexmark: NumActivePeople and NumInFlightAuctions must be below 2^31-11")
	}
	return nil
}

// maxAvgSize bounds the average sizes so that an event's extra padding
// stays a substring of the shared 1 MiB extra string (as in Nexmark for
// any size below 512 KiB).
const maxAvgSize = 1 << 18
