package query

import (
	"strings"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q14, calculation: the bids priced between 1,000,000 and 50,000,000 euros
// (cents), with the price in euros, the part of the day they were made in
// and how many 'c' their extra holds.
//
//	SELECT
//	    auction,
//	    bidder,
//	    0.908 * price as price,
//	    CASE
//	        WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
//	        WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
//	        ELSE 'otherTime'
//	    END AS bidTimeType,
//	    `dateTime`,
//	    extra,
//	    count_char(extra, 'c') AS c_counts
//	FROM bid
//	WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
//
// One flat map chained to the source. The filter compares the exact
// decimal 0.908 * price as Flink does, in integers: 908 * price > 10^9 and
// < 5 * 10^10, so price in [q14MinPrice, q14MaxPrice]; the price column is
// the double nearest to the decimal (qaEuroPrice). HOUR of the TIMESTAMP(3)
// is the hour of its UTC time (floor modulo a day; Flink's EXTRACT takes
// Java's % of the epoch ms, so before 1970 its hours would come out
// negative: a deviation only for times the generator never makes). The
// CASE's strings are VARCHAR, unpadded (Flink's type system turns CHAR
// literals of different lengths into VARCHAR). count_char is the Flink
// peer's UDF: the bytes of extra's UTF-8 equal to 'c' (strings.Count).
func init() {
	register(Query{
		Name:    "q14",
		Columns: []string{"auction", "bidder", "price", "bidTimeType", "dateTime", "extra", "c_counts"},
		Build: func(in *Input) error {
			calc := weir.FlatMap(Bids(in.Events), func(b nexmark.Bid, out weir.Collector[q14Bid]) {
				if b.Price < q14MinPrice || b.Price > q14MaxPrice {
					return
				}
				out.Collect(q14Bid{Auction: b.Auction, Bidder: b.Bidder, Price: qaEuroPrice(b.Price),
					BidTimeType: q14TimeType(b.DateTime), DateTime: b.DateTime, Extra: b.Extra,
					CCounts: int64(strings.Count(b.Extra, "c"))})
			}).Name("q14 calculation")
			Emit(in, calc, func(b q14Bid) Row {
				return Row{b.Auction, b.Bidder, b.Price, b.BidTimeType, b.DateTime, b.Extra, b.CCounts}
			})
			return nil
		},
	})
}

// The prices (cents) whose 0.908 * price lies strictly between 1,000,000
// and 50,000,000.
const (
	q14MinPrice = 1_000_000_000/908 + 1      // 908 * price > 10^9
	q14MaxPrice = (50_000_000_000 - 1) / 908 // 908 * price < 5 * 10^10
)

// q14Bid is a row of q14's result.
type q14Bid struct {
	Auction, Bidder int64
	Price           float64
	BidTimeType     string
	DateTime        int64
	Extra           string
	CCounts         int64
}

// q14TimeType is the CASE on HOUR(dateTime) of epoch ms t.
func q14TimeType(t int64) string {
	const msPerHour, msPerDay = 3_600_000, 86_400_000
	ms := t % msPerDay
	if ms < 0 {
		ms += msPerDay
	}
	switch h := ms / msPerHour; {
	case h >= 8 && h <= 18:
		return "dayTime"
	case h <= 6 || h >= 20:
		return "nightTime"
	}
	return "otherTime"
}
