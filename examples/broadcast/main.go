package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// Payment is one payment of an account.
type Payment struct {
	Account string
	Kind    string
	Amount  int64
}

// Rule is the highest amount allowed for a kind of payment; a later
// version of a kind replaces the earlier one.
type Rule struct {
	Kind    string
	Limit   int64
	Version int64
}

// Alert is a payment over the limit of the rule in force.
type Alert struct {
	Payment Payment
	Rule    Rule
}

// rulesDesc declares the broadcast state: rules by kind. Every subtask
// holds the same map, written by the broadcast side.
var rulesDesc = state.BroadcastDescriptor[string, Rule]{Name: "rules", KeyCodec: codec.String(), ValueCodec: codec.MustFor[Rule]()}

// Checker is the keyed broadcast process function. Given as a pointer, it
// is copied per subtask: the handle set in Open is the subtask's own.
type Checker struct {
	held state.ListState[Payment] // the account's payments of kinds with no rule yet
}

// Open declares the keyed state.
func (c *Checker) Open(ctx weir.KeyedRuntimeContext) error {
	c.held = state.GetListState(ctx.State(), state.ListDescriptor[Payment]{Name: "held", Codec: codec.MustFor[Payment]()})
	return nil
}

// ProcessBroadcastElement runs on every subtask for every rule: it must
// change the broadcast state the same way everywhere (it depends only on
// the rule, not on the subtask or keyed state).
func (c *Checker) ProcessBroadcastElement(ctx weir.KeyedBroadcastSideContext[string], r Rule, out weir.Collector[Alert]) error {
	state.GetBroadcastState(ctx.Broadcast(), rulesDesc).Put(r.Kind, r)
	return nil
}

// ProcessElement checks a payment, and the account's held ones, against
// the rules; the keyed side only reads the broadcast state (a read-only
// view: only ProcessBroadcastElement may write it).
func (c *Checker) ProcessElement(ctx weir.KeyedBroadcastContext[string], p Payment, out weir.Collector[Alert]) error {
	rules := state.GetReadOnlyBroadcastState(ctx.Broadcast(), rulesDesc)
	var still []Payment
	for _, q := range append(c.held.Get(), p) {
		r, ok := rules.Get(q.Kind)
		switch {
		case !ok:
			still = append(still, q)
		case q.Amount > r.Limit:
			out.Collect(Alert{Payment: q, Rule: r})
		}
	}
	c.held.Update(still)
	return nil
}

func main() {
	n := flag.Int64("payments", 12000, "how many payments to generate (4000 per second)")
	parallelism := flag.Int("parallelism", 2, "parallelism of the checker")
	flag.Parse()

	env := weir.NewEnvironment(weir.Config{Parallelism: *parallelism})
	kinds := []string{"card", "transfer", "cash"}
	// A new version of the rules every half second, one kind at a time:
	// the limits tighten.
	rules := weir.Generate(env, 12, 6, func(i int64) Rule {
		return Rule{Kind: kinds[i%3], Limit: 950 - 100*(i/3), Version: i/3 + 1}
	}).SetParallelism(1).Name("rules")
	payments := weir.Generate(env, *n, 4000, func(i int64) Payment {
		return Payment{Account: fmt.Sprint("acc-", i%50), Kind: kinds[(i/7)%3], Amount: (i * 7919) % 1000}
	}).SetParallelism(1).Name("payments")

	alerts := weir.ConnectBroadcast(
		weir.KeyBy(payments, func(p Payment) string { return p.Account }),
		weir.BroadcastTo(rules),
		&Checker{},
	)
	all, err := weir.ExecuteAndCollect(context.Background(), env, alerts, "broadcast")
	if err != nil {
		log.Fatal(err)
	}
	// Alerts per kind and rule version: which version was in force when a
	// payment came depends on timing.
	type group struct {
		kind    string
		version int64
	}
	counts := map[group]int{}
	for _, a := range all {
		counts[group{a.Rule.Kind, a.Rule.Version}]++
	}
	groups := slices.Collect(func(yield func(group) bool) {
		for g := range counts {
			if !yield(g) {
				return
			}
		}
	})
	slices.SortFunc(groups, func(a, b group) int {
		if a.kind != b.kind {
			if a.kind < b.kind {
				return -1
			}
			return 1
		}
		return int(a.version - b.version)
	})
	for _, g := range groups {
		fmt.Printf("%-8s rule v%d (limit %d): %d payments over it\n", g.kind, g.version, 950-100*(g.version-1), counts[g])
	}
	fmt.Printf("%d alerts in %d payments\n", len(all), *n)
}
