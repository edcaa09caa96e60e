package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// q3, local item suggestion: who sells in Oregon, Idaho or California in
// category 10, and which auctions.
//
//	SELECT
//	    P.name, P.city, P.state, A.id
//	FROM
//	    auction AS A INNER JOIN person AS P on A.seller = P.id
//	WHERE
//	    A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
//
// A regular (unwindowed) inner join, as Flink's StreamingJoinOperator runs
// it: the filters go below the join (flat maps chained to the source,
// projecting each side to what the join needs), both sides are keyed by
// the join key (seller, person id) and meet in a KeyedCoProcess whose keyed
// state holds every row of each side seen so far, forever (Flink's join
// keeps them without TTL too: a person or an auction may still come for
// any key). Each new row is emitted joined with every stored row of the
// other side, then stored. An inner join of two append-only inputs only
// ever appends, so the result is Emit-ted. The auction side stores only
// auction ids (all the result needs of it); the person side a list, not a
// single value, because the person view has no unique key: two people with
// one id would both join, as in Flink.
func init() {
	register(Query{
		Name:    "q3",
		Columns: []string{"name", "city", "state", "id"},
		Build: func(in *Input) error {
			auctions := weir.FlatMap(Auctions(in.Events), func(a nexmark.Auction, out weir.Collector[q3Auction]) {
				if a.Category == 10 {
					out.Collect(q3Auction{ID: a.ID, Seller: a.Seller})
				}
			}).Name("q3 category 10")
			people := weir.FlatMap(People(in.Events), func(p nexmark.Person, out weir.Collector[q3Person]) {
				if p.State == "OR" || p.State == "ID" || p.State == "CA" {
					out.Collect(q3Person{ID: p.ID, Seller: q3Seller{Name: p.Name, City: p.City, State: p.State}})
				}
			}).Name("q3 OR, ID, CA")
			joined := weir.KeyedCoProcess(weir.ConnectKeyed(
				weir.KeyByWithCodec(auctions, func(a q3Auction) int64 { return a.Seller }, codec.Int64()),
				weir.KeyByWithCodec(people, func(p q3Person) int64 { return p.ID }, codec.Int64())),
				weir.KeyedCoProcessFunction[int64, q3Auction, q3Person, q3Row](&q3Join{})).Name("q3 join")
			Emit(in, joined, func(r q3Row) Row { return Row{r.Name, r.City, r.State, r.Auction} })
			return nil
		},
	})
}

// q3Auction is what the join needs of an auction.
type q3Auction struct{ ID, Seller int64 }

// q3Seller is what the result needs of a person.
type q3Seller struct{ Name, City, State string }

// q3Person is a person with its id, the join key.
type q3Person struct {
	ID     int64
	Seller q3Seller
}

// q3Row is a row of q3's result.
type q3Row struct {
	Name, City, State string
	Auction           int64
}

// q3Join is the join of one subtask; its state is per seller id.
type q3Join struct {
	auctions state.ListState[int64]    // ids of the seller's auctions
	sellers  state.ListState[q3Seller] // the people with the seller's id
}

var (
	q3AuctionsState = state.ListDescriptor[int64]{Name: "q3 auctions", Codec: codec.Int64()}
	q3SellersState  = state.ListDescriptor[q3Seller]{Name: "q3 sellers", Codec: codec.MustFor[q3Seller]()}
)

func (j *q3Join) Open(ctx weir.KeyedRuntimeContext) error {
	j.auctions = state.GetListState(ctx.State(), q3AuctionsState)
	j.sellers = state.GetListState(ctx.State(), q3SellersState)
	return nil
}

// ProcessElement1 joins an auction with its seller, if already there.
func (j *q3Join) ProcessElement1(_ weir.KeyedContext[int64], a q3Auction, out weir.Collector[q3Row]) error {
	for _, s := range j.sellers.Get() {
		out.Collect(q3Row{Name: s.Name, City: s.City, State: s.State, Auction: a.ID})
	}
	j.auctions.Add(a.ID)
	return nil
}

// ProcessElement2 joins a person with the auctions it sold before it came.
func (j *q3Join) ProcessElement2(_ weir.KeyedContext[int64], p q3Person, out weir.Collector[q3Row]) error {
	for _, id := range j.auctions.Get() {
		out.Collect(q3Row{Name: p.Seller.Name, City: p.Seller.City, State: p.Seller.State, Auction: id})
	}
	j.sellers.Add(p.Seller)
	return nil
}
