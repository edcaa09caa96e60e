package query

import (
	"strconv"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q13, bids enriched from a bounded side input (a lookup join):
//
//	CREATE TABLE side_input (key BIGINT, `value` VARCHAR)
//	  WITH ('connector.type' = 'filesystem', 'connector.path' = '.../side_input.txt', 'format.type' = 'csv');
//
//	SELECT B.auction, B.bidder, B.price, B.dateTime, S.value
//	FROM (SELECT *, PROCTIME() as p_time FROM bid) B
//	JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
//	ON mod(B.auction, 10000) = S.key;
//
// Nexmark writes the side input with SideInputGenerator (run by
// side_input_gen.sh with --num 10000): the lines "i,i" for i from 0 to
// 9999, the key and its decimal string. Flink's lookup join reads the
// file into a map in each task and looks each bid up in it as it passes;
// a bid without a match is dropped (an inner join), which for this table
// only a negative auction id would be (Java's % keeps the sign, as Go's).
//
// Here: the same 10,000 rows, made in memory when the query is built (the
// frame's Input has no side-input file to read, and the file's content is
// fixed by Nexmark), shared read-only by every subtask; one FlatMap over
// the events picks the bids and looks the key up in that table (an array
// index, no allocation: the value strings are the table's). Append-only.
// The table never changes, so "as of" the bid's processing time is simply
// the table.
func init() {
	register(Query{
		Name:    "q13",
		Columns: []string{"auction", "bidder", "price", "dateTime", "value"},
		Build: func(in *Input) error {
			side := q13SideInput(10_000)
			joined := weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[q13Row]) {
				if e.Type != nexmark.BidEvent {
					return
				}
				b := &e.Bid
				if k := b.Auction % int64(len(side)); k >= 0 {
					out.Collect(q13Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Value: side[k]})
				}
			}).Name("q13 bids joined with the side input")
			Emit(in, joined, func(r q13Row) Row { return Row{r.Auction, r.Bidder, r.Price, r.DateTime, r.Value} })
			return nil
		},
	})
}

// q13Row is a row of q13's result.
type q13Row struct {
	Auction, Bidder, Price, DateTime int64
	Value                            string
}

// q13SideInput is Nexmark's side input of n rows: the value of key i is
// i in decimal.
func q13SideInput(n int) []string {
	side := make([]string, n)
	for i := range side {
		side[i] = strconv.Itoa(i)
	}
	return side
}
