package query

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/state"
)

// EmitChanges materializes a changelog into its final table: a count of
// bids per auction, updated by retracting the old count and inserting the
// new one, is checked against a count in memory.
func TestEmitChangesMaterializesFinalTable(t *testing.T) {
	cfg := nexmark.DefaultConfig()
	cfg.Events, cfg.EventsPerSecond = 5_000, 100
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	counts := map[int64]int64{}
	var e nexmark.Event
	for n := range cfg.Events {
		if g.Event(n, &e); e.Type == nexmark.BidEvent {
			counts[e.Bid.Auction]++
		}
	}
	type count struct{ Auction, N int64 }
	q := Query{Name: "counts", Columns: []string{"auction", "n"}, Build: func(in *Input) error {
		keyed := weir.KeyBy(Bids(in.Events), func(b nexmark.Bid) int64 { return b.Auction })
		desc := state.ValueDescriptor[int64]{Name: "n", Codec: codec.Int64()}
		changes := weir.FlatMapWithState(keyed, func(rc weir.KeyedRuntimeContext) (func(weir.KeyedContext[int64], nexmark.Bid, weir.Collector[Change[count]]) error, error) {
			n := state.GetValueState(rc.State(), desc)
			return func(_ weir.KeyedContext[int64], b nexmark.Bid, out weir.Collector[Change[count]]) error {
				c, ok := n.Value()
				if ok {
					out.Collect(Retract(count{b.Auction, c}))
				}
				n.Update(c + 1)
				out.Collect(Insert(count{b.Auction, c + 1}))
				return nil
			}, nil
		})
		EmitChanges(in, changes, func(c count) Row { return Row{c.Auction, c.N} })
		return nil
	}}
	for a, c := range counts {
		want[JSON(q.Columns, Row{a, c})]++
	}
	for _, p := range []int{1, 3} {
		out := filepath.Join(t.TempDir(), "out")
		if _, err := Run(context.Background(), q, Options{Config: cfg, Parallelism: p, Output: out}); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for sc := bufio.NewScanner(f); sc.Scan(); {
			got[sc.Text()]++
		}
		f.Close()
		if !maps.Equal(got, want) {
			t.Fatalf("parallelism %d: %d rows, want %d", p, len(got), len(want))
		}
	}
}

func TestRowValuesRoundTrip(t *testing.T) {
	row := Row{int64(-3), 2.5, "a \"b\", c", nil, true, int64(1 << 60), 1e300}
	got, err := parseValues(string(row.appendValues(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(row) {
		t.Fatalf("%v, want %v", got, row)
	}
}
