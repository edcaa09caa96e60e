package nexmark

import (
	"math"
	"math/bits"
	"strconv"
	"sync"
	"unsafe"
)

// Constants of Nexmark's model generators (not in its configuration).
const (
	firstAuctionID  = 1000 // GeneratorConfig.FIRST_AUCTION_ID
	firstPersonID   = 1000 // GeneratorConfig.FIRST_PERSON_ID
	firstCategoryID = 10   // GeneratorConfig.FIRST_CATEGORY_ID
	numCategories   = 5    // AuctionGenerator.NUM_CATEGORIES
	auctionIDLead   = 10   // AuctionGenerator.AUCTION_ID_LEAD
	personIDLead    = 10   // PersonGenerator.PERSON_ID_LEAD
	hotGroup        = 100  // HOT_AUCTION_RATIO, HOT_SELLER_RATIO, HOT_BIDDER_RATIO: the hot one of each 100
	hotChannelRatio = 2    // BidGenerator.HOT_CHANNELS_RATIO
	numChannels     = 10_000
	minStringLength = 3       // StringsGenerator.MIN_STRING_LENGTH
	extraStringLen  = 1 << 20 // StringsGenerator.REUSABLE_EXTRA_STRING's length
)

var (
	usStates    = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities    = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames  = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames   = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// Seeds of the tables Nexmark fills once per JVM from an unseeded random
// (the 1 MiB string extras are cut from, the four hot URLs, the 10,000
// channel URLs): Weir fills them from java.util.Random with these seeds,
// so they are the same on every run and a Java peer can build the same.
const (
	extraStringSeed = 0
	channelURLSeed  = 1
)

// tables are the strings every generator shares, built once.
type tables struct {
	extra       string   // REUSABLE_EXTRA_STRING
	names       []string // "First Last" for firstNames x lastNames
	hotURLs     [4]string
	channels    [numChannels]string
	channelURLs [numChannels]string
	cards       [10000]string // "%04d"
}

var (
	sharedOnce   sync.Once
	sharedTables *tables
)

func shared() *tables {
	sharedOnce.Do(func() {
		t := &tables{}
		r := newJavaRandom(extraStringSeed)
		t.extra = exactStringSlow(&r, extraStringLen)
		for _, f := range firstNames {
			for _, l := range lastNames {
				t.names = append(t.names, f+" "+l)
			}
		}
		r = newJavaRandom(channelURLSeed)
		var scratch arena
		for i := range t.hotURLs {
			t.hotURLs[i] = baseURL(&r, &scratch)
		}
		for i := range numChannels {
			url := baseURL(&r, &scratch)
			if r.nextIntN(10) > 0 {
				// Math.abs(Integer.reverse(i)); abs of MinInt32 stays negative, as in Java.
				rev := int32(bits.Reverse32(uint32(i)))
				if rev < 0 {
					rev = -rev
				}
				url += "&channel_id=" + strconv.Itoa(int(rev))
			}
			t.channels[i] = "channel-" + strconv.Itoa(i)
			t.channelURLs[i] = url
		}
		for i := range t.cards {
			t.cards[i] = string([]byte{byte('0' + i/1000), byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
		}
		sharedTables = t
	})
	return sharedTables
}

// baseURL is BidGenerator.getBaseUrl. Its three parts are views of the
// scratch arena only until the concatenation copies them, so the arena is
// emptied after each call (the one place an arena's bytes are reused).
func baseURL(r *javaRandom, scratch *arena) string {
	scratch.reserve(3 * 5)
	url := "https://www.nexmark.com/" + scratch.nextString(r, 5, '_') + "/" + scratch.nextString(r, 5, '_') + "/" + scratch.nextString(r, 5, '_') + "/item.htm?query=1"
	scratch.buf = scratch.buf[:0]
	return url
}

// exactStringSlow is StringsGenerator.nextExactString without the shared
// string: six letters from each nextInt(). Java's % keeps the sign of a
// negative int, so letters run from 'a'-25 ('H') to 'z', as in Nexmark.
func exactStringSlow(r *javaRandom, length int) string {
	b := make([]byte, length)
	var rnd int32
	n := 0
	for i := range b {
		if n == 0 {
			rnd = r.nextInt()
			n = 6
		}
		b[i] = byte('a' + rnd%26)
		rnd /= 26
		n--
	}
	return string(b)
}

// arenaBlock is how many bytes of event strings a generator allocates at
// once; a block lives as long as any string in it.
const arenaBlock = 32 << 10

// arena holds the bytes of generated strings. Bytes are never written
// again once a string views them (a full block is replaced, not reused;
// baseURL's scratch arena is the one exception, its views never escape),
// which is what makes the unsafe.String views immutable strings: one
// allocation per block instead of one per string.
type arena struct{ buf []byte }

func (a *arena) reserve(n int) {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(arenaBlock, n))
	}
}

// view returns the bytes [from, to) of the current block as a string.
func (a *arena) view(from, to int) string {
	if from == to {
		return ""
	}
	return unsafe.String(&a.buf[from], to-from)
}

// nextString is StringsGenerator.nextString(random, maxLength, special):
// 3 to maxLength-1 letters, each the special character with probability
// 1/13, trimmed of spaces at both ends (Java's trim; only the special
// ' ' can be trimmed).
func (a *arena) nextString(r *javaRandom, maxLength int32, special byte) string {
	a.reserve(int(maxLength))
	from, to := a.nextRange(r, maxLength, special)
	return a.view(from, to)
}

// nextRange writes nextString's letters at the end of the current block,
// which must have room for maxLength bytes, and returns where the trimmed
// string is.
func (a *arena) nextRange(r *javaRandom, maxLength int32, special byte) (from, to int) {
	n := int(minStringLength + r.nextIntN(maxLength-minStringLength))
	from = len(a.buf)
	for range n {
		if r.nextIntNConst(13) == 0 {
			a.buf = append(a.buf, special)
		} else {
			a.buf = append(a.buf, byte('a'+r.nextIntNConst(26)))
		}
	}
	to = len(a.buf)
	for from < to && a.buf[from] <= ' ' {
		from++
	}
	for to > from && a.buf[to-1] <= ' ' {
		to--
	}
	return from, to
}

// Generator makes the events of one Config: Event(n, e) fills e with the
// n-th event of the stream (counting from 0), independent of any other
// call, so any subset of the stream can be generated in any order. Not
// safe for concurrent use (its string arena); use one per goroutine.
type Generator struct {
	cfg     Config
	delayUs float64 // GeneratorConfig.interEventDelayUs[0]
	total   int64   // the sum of the proportions
	mix     int64   // xor-ed into every event's seed (0 for Seed 0)
	t       *tables
	a       arena
	r       javaRandom
}

// NewGenerator returns a generator for cfg (see Config.Validate).
func NewGenerator(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:     cfg,
		delayUs: 1000000.0 / float64(cfg.EventsPerSecond),
		total:   int64(cfg.PersonProportion + cfg.AuctionProportion + cfg.BidProportion),
		t:       shared(),
	}
	if cfg.Seed != 0 {
		g.mix = int64(splitmix64(cfg.Seed))
	}
	return g, nil
}

// Config returns the generator's configuration.
func (g *Generator) Config() Config { return g.cfg }

// splitmix64 spreads a user seed over all 64 bits (Steele et al.), so that
// nearby seeds give unrelated streams.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// timestampForEvent is GeneratorConfig.timestampForEvent: the double
// product truncated to whole microseconds, then to milliseconds.
func (g *Generator) timestampForEvent(eventNumber int64) int64 {
	return g.cfg.BaseTime + int64(float64(eventNumber)*g.delayUs)/1000
}

// adjustedEventNumber is GeneratorConfig.nextAdjustedEventNumber: the
// event number permuted within its out-of-order group.
func (g *Generator) adjustedEventNumber(count int64) int64 {
	n := g.cfg.OutOfOrderGroupSize
	en := g.cfg.FirstEventNumber + count
	if n == 1 {
		return en // the default: no permutation, and no two divisions per event
	}
	return en/n*n + en*953%n
}

// EventID is the id of the n-th event (what decides its type and seeds
// its fields): FirstEventID plus its adjusted event number.
func (g *Generator) EventID(n int64) int64 {
	return g.cfg.FirstEventID + g.adjustedEventNumber(n)
}

// Timestamp is the event time (ms) of the n-th event, its dateTime.
func (g *Generator) Timestamp(n int64) int64 {
	return g.timestampForEvent(g.adjustedEventNumber(n))
}

// WatermarkTimestamp is a time no later than the n-th event's nor any
// event's after it (NexmarkGenerator's watermark; with out-of-order groups
// the start of the event's group).
func (g *Generator) WatermarkTimestamp(n int64) int64 {
	k := g.cfg.OutOfOrderGroupSize
	return g.timestampForEvent((g.cfg.FirstEventNumber + n) / k * k)
}

// Event fills e with the n-th event of the stream (NexmarkGenerator's
// nextEvent after n events). The strings it sets stay valid and
// unchanged after later calls.
func (g *Generator) Event(n int64, e *Event) {
	adjusted := g.adjustedEventNumber(n)
	id := g.cfg.FirstEventID + adjusted // EventID(n)
	ts := g.timestampForEvent(adjusted) // Timestamp(n)
	g.r.reset(id ^ g.mix)
	rem := id % g.total
	switch {
	case rem < int64(g.cfg.PersonProportion):
		e.Type, e.Auction, e.Bid = PersonEvent, Auction{}, Bid{}
		g.person(id, ts, &e.Person)
	case rem < int64(g.cfg.PersonProportion+g.cfg.AuctionProportion):
		e.Type, e.Person, e.Bid = AuctionEvent, Person{}, Bid{}
		g.auction(n, id, ts, &e.Auction)
	default:
		e.Type, e.Person, e.Auction = BidEvent, Person{}, Auction{}
		g.bid(id, ts, &e.Bid)
	}
}

// person is PersonGenerator.nextPerson.
func (g *Generator) person(id, ts int64, p *Person) {
	r, t := &g.r, g.t
	p.ID = g.lastBase0PersonID(id) + firstPersonID
	first := r.nextIntN(int32(len(firstNames)))
	last := r.nextIntN(int32(len(lastNames)))
	p.Name = t.names[int(first)*len(lastNames)+int(last)]
	p.EmailAddress = g.email()
	p.CreditCard = g.creditCard()
	p.City = usCities[r.nextIntN(int32(len(usCities)))]
	p.State = usStates[r.nextIntN(int32(len(usStates)))]
	p.DateTime = ts
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = g.nextExtra(size, g.cfg.AvgPersonByteSize)
}

// email is PersonGenerator.nextEmail: nextString(7) "@" nextString(5)
// ".com". Both parts are drawn first (in Java's order), then copied
// together after them so the email is one string of the arena.
func (g *Generator) email() string {
	a := &g.a
	a.reserve(7 + 5 + 7 + 1 + 5 + 4)
	uf, ut := a.nextRange(&g.r, 7, ' ')
	hf, ht := a.nextRange(&g.r, 5, ' ')
	start := len(a.buf)
	a.buf = append(a.buf, a.buf[uf:ut]...)
	a.buf = append(a.buf, '@')
	a.buf = append(a.buf, a.buf[hf:ht]...)
	a.buf = append(a.buf, ".com"...)
	return a.view(start, len(a.buf))
}

// creditCard is PersonGenerator.nextCreditCard: four "%04d" numbers
// separated by spaces.
func (g *Generator) creditCard() string {
	a := &g.a
	a.reserve(19)
	start := len(a.buf)
	for i := range 4 {
		if i > 0 {
			a.buf = append(a.buf, ' ')
		}
		a.buf = append(a.buf, g.t.cards[g.r.nextIntN(10000)]...)
	}
	return a.view(start, len(a.buf))
}

// auction is AuctionGenerator.nextAuction; n is the events generated
// before it (eventsCountSoFar).
func (g *Generator) auction(n, id, ts int64, au *Auction) {
	r := &g.r
	au.ID = g.lastBase0AuctionID(id) + firstAuctionID
	if r.nextIntN(int32(g.cfg.HotSellersRatio)) > 0 {
		au.Seller = g.lastBase0PersonID(id) / hotGroup * hotGroup
	} else {
		au.Seller = g.nextBase0PersonID(id)
	}
	au.Seller += firstPersonID
	au.Category = firstCategoryID + int64(r.nextIntN(numCategories))
	au.InitialBid = nextPrice(r)
	au.DateTime = ts
	au.Expires = ts + g.nextAuctionLengthMs(n, ts)
	au.ItemName = g.a.nextString(r, 20, ' ')
	au.Description = g.a.nextString(r, 100, ' ')
	au.Reserve = au.InitialBid + nextPrice(r)
	size := 8 + len(au.ItemName) + len(au.Description) + 8 + 8 + 8 + 8 + 8
	au.Extra = g.nextExtra(size, g.cfg.AvgAuctionByteSize)
}

// nextAuctionLengthMs is AuctionGenerator.nextAuctionLengthMs: on average
// the event time until NumInFlightAuctions more auctions have started.
func (g *Generator) nextAuctionLengthMs(n, ts int64) int64 {
	current := g.adjustedEventNumber(n)
	eventsForAuctions := int64(g.cfg.NumInFlightAuctions) * g.total / int64(g.cfg.AuctionProportion)
	future := g.timestampForEvent(current + eventsForAuctions)
	horizon := future - ts
	return 1 + g.nextLong(max(horizon*2, 1))
}

// bid is BidGenerator.nextBid.
func (g *Generator) bid(id, ts int64, b *Bid) {
	r, t := &g.r, g.t
	if r.nextIntN(int32(g.cfg.HotAuctionRatio)) > 0 {
		b.Auction = g.lastBase0AuctionID(id) / hotGroup * hotGroup
	} else {
		b.Auction = g.nextBase0AuctionID(id)
	}
	b.Auction += firstAuctionID
	if r.nextIntN(int32(g.cfg.HotBiddersRatio)) > 0 {
		// The second person of the group, so hot bidders and hot sellers differ.
		b.Bidder = g.lastBase0PersonID(id)/hotGroup*hotGroup + 1
	} else {
		b.Bidder = g.nextBase0PersonID(id)
	}
	b.Bidder += firstPersonID
	b.Price = nextPrice(r)
	if r.nextIntN(hotChannelRatio) > 0 {
		i := r.nextIntN(int32(len(hotChannels)))
		b.Channel, b.URL = hotChannels[i], t.hotURLs[i]
	} else {
		i := r.nextIntN(numChannels)
		b.Channel, b.URL = t.channels[i], t.channelURLs[i]
	}
	// Nexmark adds FIRST_PERSON_ID to the bidder a second time here, so
	// bidders are 1000 above the person ids they were drawn from; kept to
	// stay equal to Nexmark's events.
	b.Bidder += firstPersonID
	b.DateTime = ts
	b.Extra = g.nextExtra(8+8+8+8, g.cfg.AvgBidByteSize)
}

// lastBase0PersonID is PersonGenerator.lastBase0PersonId.
func (g *Generator) lastBase0PersonID(eventID int64) int64 {
	pp := int64(g.cfg.PersonProportion)
	epoch, offset := eventID/g.total, eventID%g.total
	if offset >= pp {
		offset = pp - 1
	}
	return epoch*pp + offset
}

// lastBase0AuctionID is AuctionGenerator.lastBase0AuctionId.
func (g *Generator) lastBase0AuctionID(eventID int64) int64 {
	pp, ap := int64(g.cfg.PersonProportion), int64(g.cfg.AuctionProportion)
	epoch, offset := eventID/g.total, eventID%g.total
	switch {
	case offset < pp:
		epoch--
		offset = ap - 1
	case offset >= pp+ap:
		offset = ap - 1
	default:
		offset -= pp
	}
	return epoch*ap + offset
}

// nextBase0PersonID is PersonGenerator.nextBase0PersonId: one of the last
// NumActivePeople people, or up to 10 ahead.
func (g *Generator) nextBase0PersonID(eventID int64) int64 {
	numPeople := g.lastBase0PersonID(eventID) + 1
	active := min(numPeople, int64(g.cfg.NumActivePeople))
	return numPeople - active + g.nextLong(active+personIDLead)
}

// nextBase0AuctionID is AuctionGenerator.nextBase0AuctionId: one of the
// last NumInFlightAuctions auctions, or up to 10 ahead.
func (g *Generator) nextBase0AuctionID(eventID int64) int64 {
	maxAuction := g.lastBase0AuctionID(eventID)
	minAuction := max(maxAuction-int64(g.cfg.NumInFlightAuctions), 0)
	return minAuction + g.nextLong(maxAuction-minAuction+1+auctionIDLead)
}

// nextLong is LongGenerator.nextLong: nextInt(n) below 2^31-1, else
// Math.abs(nextLong() % n).
func (g *Generator) nextLong(n int64) int64 {
	if n < math.MaxInt32 {
		return int64(g.r.nextIntN(int32(n)))
	}
	v := g.r.nextLong() % n
	if v < 0 {
		v = -v
	}
	return v
}

// nextExtra is StringsGenerator.nextExtra: padding so that size plus its
// length averages avg (uniform within +-20%), cut from the shared string.
func (g *Generator) nextExtra(size, avg int) string {
	if size > avg {
		return ""
	}
	avg -= size
	delta := int(javaRound(float64(avg) * 0.2))
	n := avg - delta
	if delta != 0 {
		n += int(g.r.nextIntN(int32(2 * delta)))
	}
	// nextExactString: below half the shared string's length (always, as
	// Config bounds the sizes), a substring at a random offset.
	off := int(g.r.nextIntN(int32(len(g.t.extra) - n)))
	return g.t.extra[off : off+n]
}
