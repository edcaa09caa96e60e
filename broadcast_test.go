package weir_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
	"github.com/weirhq/weir/tuple"
	"go.uber.org/goleak"
)

type event struct {
	User, Kind string
	Value      int64
}

type rule struct {
	Kind      string
	Threshold int64
}

var rulesDesc = state.BroadcastDescriptor[string, int64]{Name: "rules", KeyCodec: codec.String(), ValueCodec: codec.Int64()}

// overThreshold keeps each user's events in keyed state and, when the final
// watermark fires their timer, counts those above their kind's threshold in
// the broadcast rules (complete by then, whatever order the inputs arrived in).
type overThreshold struct {
	events state.ListState[event]
	rules  state.ReadOnlyBroadcastState[string, int64]
}

func (o *overThreshold) Open(ctx weir.KeyedRuntimeContext) error {
	o.events = state.GetListState(ctx.State(), state.ListDescriptor[event]{Name: "events", Codec: codec.MustFor[event]()})
	return nil
}

func (o *overThreshold) ProcessElement(ctx weir.KeyedBroadcastContext[string], e event, out weir.Collector[tuple.T2[string, int64]]) error {
	o.rules = state.GetReadOnlyBroadcastState(ctx.Broadcast(), rulesDesc)
	o.events.Add(e)
	ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64 - 1)
	return nil
}

func (o *overThreshold) ProcessBroadcastElement(ctx weir.KeyedBroadcastSideContext[string], r rule, out weir.Collector[tuple.T2[string, int64]]) error {
	state.GetBroadcastState(ctx.Broadcast(), rulesDesc).Put(r.Kind, r.Threshold)
	return nil
}

func (o *overThreshold) OnTimer(ctx weir.OnTimerContext[string], ts int64, out weir.Collector[tuple.T2[string, int64]]) error {
	n := int64(0)
	for _, e := range o.events.Get() {
		if th, ok := o.rules.Get(e.Kind); ok && e.Value > th {
			n++
		}
	}
	out.Collect(tuple.Of2(ctx.CurrentKey(), n))
	return nil
}

func TestBroadcastStatePattern(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	rng := rand.New(rand.NewPCG(seed(t), 6))
	kinds := []string{"login", "buy", "sell", "view"}
	var rules []rule
	for _, k := range kinds {
		rules = append(rules, rule{Kind: k, Threshold: rng.Int64N(100)})
	}
	rules = append(rules, rule{Kind: "buy", Threshold: rng.Int64N(100)}) // a later rule replaces an earlier one
	thresholds := map[string]int64{}
	for _, r := range rules {
		thresholds[r.Kind] = r.Threshold
	}
	events := make([]event, 5000)
	want := map[string]int64{}
	for i := range events {
		e := event{User: fmt.Sprintf("u%d", rng.IntN(200)), Kind: kinds[rng.IntN(len(kinds))], Value: rng.Int64N(100)}
		events[i] = e
		if _, ok := want[e.User]; !ok {
			want[e.User] = 0
		}
		if e.Value > thresholds[e.Kind] {
			want[e.User]++
		}
	}
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			env := weir.NewEnvironment(weir.Config{Parallelism: p})
			ev := weir.KeyBy(weir.FromSlice(env, events), func(e event) string { return e.User })
			rs := weir.BroadcastTo(weir.FromSlice(env, rules))
			out := run(t, env, weir.ConnectBroadcast[string, event, rule, tuple.T2[string, int64]](ev, rs, &overThreshold{}))
			if len(out) != len(want) {
				t.Fatalf("%d users, want %d", len(out), len(want))
			}
			for _, kv := range out {
				if want[kv.F0] != kv.F1 {
					t.Fatalf("user %s: %d events over threshold, want %d", kv.F0, kv.F1, want[kv.F0])
				}
			}
		})
	}
}
