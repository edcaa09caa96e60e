package nexmark

// EventType says which of an Event's three parts holds the event.
type EventType uint8

const (
	// PersonEvent: a new person, Event.Person.
	PersonEvent EventType = iota
	// AuctionEvent: a new auction, Event.Auction.
	AuctionEvent
	// BidEvent: a bid on an auction, Event.Bid.
	BidEvent
)

// String is the event type's name in the JSON lines: person, auction, bid.
func (t EventType) String() string {
	switch t {
	case PersonEvent:
		return "person"
	case AuctionEvent:
		return "auction"
	case BidEvent:
		return "bid"
	}
	return "unknown"
}

// Person is Nexmark's person: someone who sells or bids. Times are epoch
// milliseconds.
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is Nexmark's auction of one item. It is open from DateTime until
// Expires (epoch milliseconds); Seller is a Person's ID.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is Nexmark's bid on an auction (Auction is an Auction's ID, Bidder
// a Person's ID, Price in cents).
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Event is one Nexmark event: Type says which part holds it; the other two
// parts are zero. A value, not a pointer per part, so a generator fills
// events in place without allocating (Nexmark's Java Event holds three
// references of which two are null).
type Event struct {
	Type    EventType
	Person  Person
	Auction Auction
	Bid     Bid
}

// DateTime is the event's time (epoch ms), whichever its type.
func (e *Event) DateTime() int64 {
	switch e.Type {
	case PersonEvent:
		return e.Person.DateTime
	case AuctionEvent:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}
