package query

import (
	"slices"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q8, monitor new users: the people who registered and created an auction
// (as its seller) in the same tumbling window of 10 s.
//
//	INSERT INTO nexmark_q8
//	SELECT P.id, P.name, P.starttime
//	FROM (
//	  SELECT id, name, window_start AS starttime, window_end AS endtime
//	  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//	  GROUP BY id, name, window_start, window_end
//	) P
//	JOIN (
//	  SELECT seller, window_start AS starttime, window_end AS endtime
//	  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//	  GROUP BY seller, window_start, window_end
//	) A
//	ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
//
// A window join of people and auctions on id = seller: both sides, cut down
// to what the join needs (a person's id and name; an auction's seller) and
// tagged by one pass over the events (the two views at once: People and
// Auctions would each copy every event), are keyed
// by the person id / seller and put into Weir's tumbling event-time windows
// of 10 s, where an incremental aggregate (a co-group that keeps no
// elements) collects the window's distinct names of the person and whether
// the id sold anything in it. When the window fires, a person with a sale
// there gives one row per distinct (id, name), as the GROUP BY on both sides
// makes the join give (several auctions of one seller in a window count
// once). Weir's WindowJoin/WindowCoGroup would keep every auction of the
// window in a list (most of a window's auctions are the hot seller's); the
// aggregate keeps one small accumulator per id and window instead. stime is
// window_start (epoch ms). Append-only, as Flink's window join of two window
// aggregates; late events are dropped, as Flink's window aggregation does.
func init() {
	register(Query{
		Name:    "q8",
		Columns: []string{"id", "name", "stime"},
		Build: func(in *Input) error {
			// The person and auction views in one pass over the events,
			// projected (rather than People and Auctions, which would
			// each get every event).
			sides := weir.FlatMap(in.Events, func(e nexmark.Event, out weir.Collector[q8Side]) {
				switch e.Type {
				case nexmark.PersonEvent:
					out.Collect(q8Side{ID: e.Person.ID, Name: e.Person.Name, Person: true})
				case nexmark.AuctionEvent:
					out.Collect(q8Side{ID: e.Auction.Seller})
				}
			}).Name("q8 people and sellers")
			keyed := weir.KeyBy(sides, func(s q8Side) int64 { return s.ID })
			joined := weir.WindowAggregateProcess(weir.Window(keyed, weir.TumblingEventTimeWindows(10*time.Second)),
				q8CoGroup{}, weir.ProcessWindowFunc[int64, q8Acc, q8Result](q8Emit)).Name("q8 window join")
			Emit(in, joined, func(r q8Result) Row { return Row{r.ID, r.Name, r.Start} })
			return nil
		},
	})
}

// q8Side is a person (Person true: its id and name) or an auction (its
// seller as ID).
type q8Side struct {
	ID     int64
	Name   string
	Person bool
}

// q8Acc is what a window holds of one id: the distinct names of people
// with that id, and whether an auction of that seller came.
type q8Acc struct {
	Names []string
	Sold  bool
}

// q8CoGroup is the window join as an aggregate function.
type q8CoGroup struct{}

func (q8CoGroup) CreateAccumulator() q8Acc { return q8Acc{} }

func (q8CoGroup) Add(s q8Side, acc q8Acc) q8Acc {
	if !s.Person {
		acc.Sold = true
	} else if !slices.Contains(acc.Names, s.Name) {
		// A new slice: acc's may be the stored one.
		acc.Names = append(slices.Clip(acc.Names), s.Name)
	}
	return acc
}

func (q8CoGroup) GetResult(acc q8Acc) q8Acc { return acc }

func (q8CoGroup) Merge(a, b q8Acc) q8Acc {
	names := slices.Clip(a.Names)
	for _, n := range b.Names {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return q8Acc{Names: names, Sold: a.Sold || b.Sold}
}

// q8Result is a row: a new person who sold in the window starting at Start.
type q8Result struct {
	ID    int64
	Name  string
	Start int64
}

func q8Emit(ctx weir.WindowContext[int64], accs []q8Acc, out weir.Collector[q8Result]) error {
	acc := accs[0]
	if !acc.Sold {
		return nil
	}
	for _, n := range acc.Names {
		out.Collect(q8Result{ID: ctx.CurrentKey(), Name: n, Start: ctx.Window().Start})
	}
	return nil
}
