package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q10, log to file system: every bid with the day and the minute it was
// made in, the partition of the files Nexmark's q10 writes them to.
//
//	INSERT INTO nexmark_q10
//	SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
//	FROM bid;
//
// Nexmark's nexmark_q10 is a filesystem table PARTITIONED BY (dt, hm),
// CSV files committed per partition a minute after its time has passed;
// Weir's result table is the rows it would write (the Flink peer skips q10
// for writing files). One map chained to the source computes each bid's
// partition, its UTC day and minute of the day, as integers; dt and hm are
// formatted from them only when rows are written (DATE_FORMAT in UTC: the
// generator's dateTime is a TIMESTAMP(3) taken as UTC). Not reproduced:
// the files, their rolling and the partition commit (success files).
func init() {
	register(Query{
		Name:    "q10",
		Columns: []string{"auction", "bidder", "price", "dateTime", "extra", "dt", "hm"},
		Build: func(in *Input) error {
			logged := weir.Map(Bids(in.Events), func(b nexmark.Bid) q10Bid {
				day, minute := qaDayMinute(b.DateTime)
				return q10Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra, Day: day, Minute: minute}
			}).Name("q10 partitions")
			Emit(in, logged, func(b q10Bid) Row {
				var buf [16]byte
				dt := string(qaAppendDate(buf[:0], b.Day))
				hm := string(qaAppendMinute(buf[:0], b.Minute))
				return Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra, dt, hm}
			})
			return nil
		},
	})
}

// q10Bid is a bid with its partition: Day since 1970-01-01 and Minute of
// the day, UTC.
type q10Bid struct {
	Auction, Bidder, Price, DateTime int64
	Extra                            string
	Day, Minute                      int64
}
