package weir_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/state"
)

// The tests of broadcast state: read-only on the element side,
// readable from timers, ApplyToKeyedState, values changed in place under
// checkpoints, and restore after a failure.

// waitFor polls until n reaches want: a test's gate that orders one
// input of a connected stream after the other (the gated function runs
// before its task emitted anything, so it holds back nothing of the other
// input).
func waitFor(n *atomic.Int64, want int64) {
	deadline := time.Now().Add(time.Minute)
	for n.Load() < want {
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("waitFor: %d of %d after a minute", n.Load(), want))
		}
		time.Sleep(time.Millisecond)
	}
}

// ruleSets is the broadcast state of the timer and failure tests: per
// event kind, a map of rule id to threshold, changed in place (no Put
// after the first), keeping the kind's last Keep rules; the threshold of a
// kind is the sum modulo 100 (so that every rule kept counts).
var ruleSets = state.BroadcastDescriptor[string, map[int64]int64]{Name: "rule-sets", KeyCodec: codec.String(), ValueCodec: codec.MustFor[map[int64]int64]()}

type ruleAdd struct {
	ID        int64
	Kind      string
	Threshold int64
	Keep      int
}

// thresholdOf reads a kind's threshold from the read-only broadcast state.
func thresholdOf(rs state.ReadOnlyBroadcastState[string, map[int64]int64], kind string) int64 {
	m, _ := rs.Get(kind)
	sum := int64(0)
	for _, v := range m {
		sum += v
	}
	return sum % 100
}

// addRule changes the kind's rule set in place.
func addRule(bs state.BroadcastState[string, map[int64]int64], r ruleAdd) {
	m, ok := bs.Get(r.Kind)
	if !ok {
		m = map[int64]int64{}
		bs.Put(r.Kind, m)
	}
	m[r.ID] = r.Threshold
	if len(m) > r.Keep {
		delete(m, r.ID-int64(4*r.Keep)) // the same kind's rule Keep rules before
	}
}

// timerCounter keeps each user's events in keyed state and counts, when the
// final watermark fires its timer, those above their kind's threshold,
// read from the broadcast state in OnTimer through its context.
type timerCounter struct {
	events state.ListState[event]
	pass   func(i int64) // nil, or the failure test's hook
}

func (c *timerCounter) Open(ctx weir.KeyedRuntimeContext) error {
	c.events = state.GetListState(ctx.State(), state.ListDescriptor[event]{Name: "events", Codec: codec.MustFor[event]()})
	return nil
}

func (c *timerCounter) ProcessElement(ctx weir.KeyedBroadcastContext[string], e event, out weir.Collector[string]) error {
	c.events.Add(e)
	ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64 - 1)
	return nil
}

func (c *timerCounter) ProcessBroadcastElement(ctx weir.KeyedBroadcastSideContext[string], r ruleAdd, out weir.Collector[string]) error {
	addRule(state.GetBroadcastState(ctx.Broadcast(), ruleSets), r)
	return nil
}

func (c *timerCounter) OnTimer(ctx weir.KeyedBroadcastOnTimerContext[string], ts int64, out weir.Collector[string]) error {
	rs := state.GetReadOnlyBroadcastState(ctx.Broadcast(), ruleSets)
	n := 0
	for _, e := range c.events.Get() {
		if e.Value > thresholdOf(rs, e.Kind) {
			n++
		}
	}
	out.Collect(fmt.Sprintf("%s %d %v", ctx.CurrentKey(), n, ctx.TimeDomain() == weir.EventTime))
	return nil
}

// timerCase is the input of the timer tests and its expected output,
// computed with plain maps. Each kind keeps its last keep rules.
func timerCase(rng *rand.Rand, nEvents, nRules, keep int) ([]event, []ruleAdd, []string) {
	kinds := []string{"login", "buy", "sell", "view"}
	rules := make([]ruleAdd, nRules)
	sets := map[string]map[int64]int64{}
	for i := range rules {
		r := ruleAdd{ID: int64(i), Kind: kinds[i%len(kinds)], Threshold: rng.Int64N(100), Keep: keep}
		rules[i] = r
		if sets[r.Kind] == nil {
			sets[r.Kind] = map[int64]int64{}
		}
		sets[r.Kind][r.ID] = r.Threshold
		if len(sets[r.Kind]) > keep {
			delete(sets[r.Kind], r.ID-int64(4*keep))
		}
	}
	threshold := func(kind string) int64 {
		sum := int64(0)
		for _, v := range sets[kind] {
			sum += v
		}
		return sum % 100
	}
	events := make([]event, nEvents)
	count := map[string]int{}
	for i := range events {
		e := event{User: fmt.Sprintf("u%d", rng.IntN(300)), Kind: kinds[rng.IntN(len(kinds))], Value: rng.Int64N(100)}
		events[i] = e
		if e.Value > threshold(e.Kind) {
			count[e.User]++
		} else {
			count[e.User] += 0
		}
	}
	var want []string
	for u, n := range count {
		want = append(want, fmt.Sprintf("%s %d true", u, n))
	}
	return events, rules, want
}

// TestBroadcastStateReadInTimers: a keyed broadcast function's OnTimer
// reads the broadcast state from its context (no handle kept from
// ProcessElement), on both backends and at parallelism 1 and 3.
func TestBroadcastStateReadInTimers(t *testing.T) {
	events, rules, want := timerCase(rand.New(rand.NewPCG(seed(t), 44)), 4000, 40, 4)
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p=%d", backend, p), func(t *testing.T) {
				env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend, StateDir: t.TempDir()})
				ev := weir.KeyBy(weir.FromSlice(env, events), func(e event) string { return e.User })
				rs := weir.BroadcastTo(weir.FromSlice(env, rules).SetParallelism(1))
				got := run(t, env, weir.ConnectBroadcast[string, event, ruleAdd, string](ev, rs, &timerCounter{}))
				sameLines(t, "counts from OnTimer", got, want)
			})
		}
	}
}

// TestBroadcastStateRestoredAfterFailure runs the timer test's job with
// rules and events arriving over about a second, checkpoints every 20 ms
// and one failure after a checkpoint: the broadcast state (maps changed in
// place, every rule counting) restored from the checkpoint, plus the
// rules replayed after it, give exactly the counts of a run without
// failure.
func TestBroadcastStateRestoredAfterFailure(t *testing.T) {
	const n = 3000
	events, rules, want := timerCase(rand.New(rand.NewPCG(seed(t), 45)), n, 400, 400)
	for _, backend := range []string{"hashmap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			f := newFailOnce(n)
			env := weir.NewEnvironment(f.config(t, backend))
			src := weir.Generate(env, n, float64(n), func(i int64) int64 { return i }).SetParallelism(1)
			ev := weir.KeyBy(weir.Map(src, func(i int64) event { f.pass(i); return events[i] }).SetParallelism(1), func(e event) string { return e.User })
			rsrc := weir.Generate(env, int64(len(rules)), float64(len(rules)), func(i int64) ruleAdd { return rules[i] }).SetParallelism(1)
			out := weir.ConnectBroadcast[string, event, ruleAdd, string](ev, weir.BroadcastTo(rsrc), &timerCounter{})
			dir := t.TempDir()
			weir.WriteFiles(out, dir, nil)
			if _, err := env.Execute(context.Background(), "broadcast-failure"); err != nil {
				t.Fatal(err)
			}
			f.check(t)
			t.Logf("restored from checkpoint %d", f.restoredFrom.Load())
			sameLines(t, "counts after a failure", readCommitted(t, dir), want)
		})
	}
}

// TestBroadcastStateChangedInPlaceUnderCheckpoints changes map values of
// broadcast state in place (as a Flink user changes a HashMap) on every
// broadcast element, while checkpoints run every 10 ms (the least
// allowed) and the keyed side
// reads the maps: run under -race, it shows that no snapshot reads a map
// the task writes; the result is checked against plain maps.
//
//	go test -race -run TestBroadcastStateChangedInPlaceUnderCheckpoints .
func TestBroadcastStateChangedInPlaceUnderCheckpoints(t *testing.T) {
	const n = 3000
	events, rules, want := timerCase(rand.New(rand.NewPCG(seed(t), 46)), n, 3000, 4)
	var checkpoints atomic.Int64
	env := weir.NewEnvironment(weir.Config{Parallelism: 2,
		Checkpointing: &weir.CheckpointConfig{Interval: 10 * time.Millisecond, Dir: t.TempDir()},
		OnCheckpoint:  func(int64, bool) { checkpoints.Add(1) }})
	// Both inputs take about a second, so that many checkpoints run
	// while the maps change.
	ev := weir.KeyBy(weir.Generate(env, n, n, func(i int64) event { return events[i] }).SetParallelism(1), func(e event) string { return e.User })
	rs := weir.BroadcastTo(weir.Generate(env, int64(len(rules)), float64(len(rules)), func(i int64) ruleAdd { return rules[i] }).SetParallelism(1))
	got := run(t, env, weir.ConnectBroadcast[string, event, ruleAdd, string](ev, rs, &timerCounter{}))
	sameLines(t, "counts", got, want)
	if c := checkpoints.Load(); c < 20 {
		t.Fatalf("%d checkpoints completed, want at least 20 while the maps changed", c)
	}
	t.Logf("%d checkpoints", checkpoints.Load())
}

// Writes from where broadcast state is read-only.

var limitDesc = state.BroadcastDescriptor[string, int64]{Name: "limits", KeyCodec: codec.String(), ValueCodec: codec.Int64()}

// sneakyWriter writes broadcast state from its keyed side (in
// ProcessElement or OnTimer, as where says), through the runtime context's
// full operator store: the type of KeyedBroadcastContext.Broadcast does
// not allow it, so it goes around.
type sneakyWriter struct {
	where string
	rt    weir.RuntimeContext
}

func (s *sneakyWriter) Open(ctx weir.KeyedRuntimeContext) error { s.rt = ctx; return nil }

func (s *sneakyWriter) ProcessElement(ctx weir.KeyedBroadcastContext[string], v string, out weir.Collector[string]) error {
	if s.where == "element" {
		state.GetBroadcastState(ctx.OperatorState(), limitDesc).Put(v, 1)
	}
	ctx.TimerService().RegisterEventTimeTimer(1)
	return nil
}

func (s *sneakyWriter) ProcessBroadcastElement(ctx weir.KeyedBroadcastSideContext[string], v string, out weir.Collector[string]) error {
	state.GetBroadcastState(ctx.Broadcast(), limitDesc).Put(v, 2) // allowed
	return nil
}

func (s *sneakyWriter) OnTimer(ctx weir.KeyedBroadcastOnTimerContext[string], ts int64, out weir.Collector[string]) error {
	if s.where == "timer" {
		state.GetBroadcastState(s.rt.OperatorState(), limitDesc).Remove(ctx.CurrentKey())
	}
	return nil
}

// nonKeyedWriter does the same in a BroadcastProcessFunction.
type nonKeyedWriter struct{}

func (nonKeyedWriter) ProcessElement(ctx weir.ReadOnlyBroadcastContext, v string, out weir.Collector[string]) error {
	state.GetBroadcastState(ctx.OperatorState(), limitDesc).Clear()
	return nil
}

func (nonKeyedWriter) ProcessBroadcastElement(ctx weir.BroadcastContext, v string, out weir.Collector[string]) error {
	return nil
}

// TestBroadcastStateWriteFromElementSideFails: a write to broadcast state
// from ProcessElement or OnTimer of a keyed broadcast function, or from
// ProcessElement of a non-keyed one, fails the job at once (no restart,
// although a restart strategy is set) with an error that names the
// function, where it ran and what to do.
func TestBroadcastStateWriteFromElementSideFails(t *testing.T) {
	cases := []struct {
		name, want string
		job        func(env *weir.Environment, in weir.DataStream[string], bs weir.BroadcastStream[string]) weir.DataStream[string]
	}{
		{"keyed ProcessElement", `broadcast state "limits": Put from ProcessElement of *weir_test.sneakyWriter`,
			func(env *weir.Environment, in weir.DataStream[string], bs weir.BroadcastStream[string]) weir.DataStream[string] {
				return weir.ConnectBroadcast(weir.KeyBy(in, func(s string) string { return s }), bs, weir.KeyedBroadcastProcessFunction[string, string, string, string](&sneakyWriter{where: "element"}))
			}},
		{"keyed OnTimer", `broadcast state "limits": Remove from OnTimer of *weir_test.sneakyWriter`,
			func(env *weir.Environment, in weir.DataStream[string], bs weir.BroadcastStream[string]) weir.DataStream[string] {
				return weir.ConnectBroadcast(weir.KeyBy(in, func(s string) string { return s }), bs, weir.KeyedBroadcastProcessFunction[string, string, string, string](&sneakyWriter{where: "timer"}))
			}},
		{"non-keyed ProcessElement", `broadcast state "limits": Clear from ProcessElement of weir_test.nonKeyedWriter`,
			func(env *weir.Environment, in weir.DataStream[string], bs weir.BroadcastStream[string]) weir.DataStream[string] {
				return weir.ConnectBroadcastNonKeyed(in, bs, weir.BroadcastProcessFunction[string, string, string](nonKeyedWriter{}))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var restarts atomic.Int64
			env := weir.NewEnvironment(weir.Config{Parallelism: 2,
				Restart: map[string]string{"restart-strategy.type": "fixed-delay",
					"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
				OnRestart: func(int, int64, error) { restarts.Add(1) }})
			in := weir.FromSlice(env, []string{"a", "b", "c", "d"})
			bs := weir.BroadcastTo(weir.FromSlice(env, []string{"x"}))
			_, err := weir.ExecuteAndCollect(context.Background(), env, c.job(env, in, bs), t.Name())
			if err == nil {
				t.Fatal("the job succeeded")
			}
			for _, part := range []string{c.want, "where broadcast state is read-only", "only ProcessBroadcastElement may write it"} {
				if !strings.Contains(err.Error(), part) {
					t.Fatalf("error %q\ndoes not say %q", err, part)
				}
			}
			if !failure.IsPermanent(err) || restarts.Load() != 0 {
				t.Fatalf("permanent %v after %d restarts, want a permanent failure and no restart: %v", failure.IsPermanent(err), restarts.Load(), err)
			}
		})
	}
}

// TestReadOnlyBroadcastStateHasNoWrites: the element side's view of
// broadcast state cannot be asserted back to a writable BroadcastState.
func TestReadOnlyBroadcastStateHasNoWrites(t *testing.T) {
	s := state.NewOperatorStore()
	state.GetBroadcastState(s, limitDesc).Put("a", 1)
	ro := state.GetReadOnlyBroadcastState(s.ReadOnly(), limitDesc)
	if _, ok := ro.(state.BroadcastState[string, int64]); ok {
		t.Fatal("the read-only view is a BroadcastState")
	}
	if v, ok := ro.Get("a"); !ok || v != 1 || !ro.Contains("a") || len(maps.Collect(ro.All())) != 1 {
		t.Fatalf("read-only view: Get %d %v, want the entry written", v, ok)
	}
}

// The non-keyed broadcast function.

// limitFilter passes the elements of a non-keyed stream at or below their
// kind's limit, read-only from the broadcast state.
type limitFilter struct{ seen *atomic.Int64 }

func (f *limitFilter) ProcessElement(ctx weir.ReadOnlyBroadcastContext, e event, out weir.Collector[string]) error {
	if lim, ok := state.GetReadOnlyBroadcastState(ctx.Broadcast(), limitDesc).Get(e.Kind); ok && e.Value <= lim {
		out.Collect(fmt.Sprintf("%s %s %d", e.User, e.Kind, e.Value))
	}
	return nil
}

func (f *limitFilter) ProcessBroadcastElement(ctx weir.BroadcastContext, r rule, out weir.Collector[string]) error {
	state.GetBroadcastState(ctx.Broadcast(), limitDesc).Put(r.Kind, r.Threshold)
	f.seen.Add(1)
	return nil
}

// TestConnectBroadcastNonKeyed filters a non-keyed stream by rules kept in
// broadcast state; the events wait until every subtask has all rules, so
// the result is that of the final rules.
func TestConnectBroadcastNonKeyed(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 47))
	kinds := []string{"login", "buy", "sell"}
	var rules []rule
	limits := map[string]int64{}
	for i := range 10 {
		r := rule{Kind: kinds[i%len(kinds)], Threshold: rng.Int64N(100)}
		rules = append(rules, r)
		limits[r.Kind] = r.Threshold
	}
	events := make([]event, 3000)
	var want []string
	for i := range events {
		e := event{User: fmt.Sprintf("u%d", rng.IntN(50)), Kind: append(kinds, "view")[rng.IntN(4)], Value: rng.Int64N(100)}
		events[i] = e
		if lim, ok := limits[e.Kind]; ok && e.Value <= lim {
			want = append(want, fmt.Sprintf("%s %s %d", e.User, e.Kind, e.Value))
		}
	}
	for _, p := range []int{1, 3} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			var seen atomic.Int64
			env := weir.NewEnvironment(weir.Config{Parallelism: p})
			// Rebalance: the gate must not be chained into the
			// broadcast operator's task, which it would stop.
			ev := weir.Map(weir.FromSlice(env, events), func(e event) event { waitFor(&seen, int64(p*len(rules))); return e }).Rebalance()
			rs := weir.BroadcastTo(weir.FromSlice(env, rules).SetParallelism(1))
			got := run(t, env, weir.ConnectBroadcastNonKeyed[event, rule, string](ev, rs, &limitFilter{seen: &seen}))
			sameLines(t, "filtered events", got, want)
		})
	}
}

// ApplyToKeyedState.

type command struct {
	Op   string // "scale", "drop", "clear-odd", "report"
	F    int64
	Kind string
}

var (
	sumDesc   = state.ValueDescriptor[int64]{Name: "sum", Codec: codec.Int64()}
	kindsDesc = state.MapDescriptor[string, int64]{Name: "kinds", UserKeyCodec: codec.String(), ValueCodec: codec.Int64()}
)

// applier keeps per user the sum of values and a count per kind; commands
// on the broadcast side change every user's state through
// ApplyToKeyedState, or report it; the final timer reports what is left.
type applier struct {
	processed *atomic.Int64
	sum       state.ValueState[int64]
	kinds     state.MapState[string, int64]
	bctx      weir.KeyedBroadcastSideContext[string] // kept to misuse it in OnTimer
}

func (a *applier) Open(ctx weir.KeyedRuntimeContext) error {
	a.sum, a.kinds = state.GetValueState(ctx.State(), sumDesc), state.GetMapState(ctx.State(), kindsDesc)
	return nil
}

func (a *applier) ProcessElement(ctx weir.KeyedBroadcastContext[string], e event, out weir.Collector[string]) error {
	v, _ := a.sum.Value()
	a.sum.Update(v + e.Value)
	c, _ := a.kinds.Get(e.Kind)
	a.kinds.Put(e.Kind, c+1)
	ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64 - 1)
	a.processed.Add(1)
	return nil
}

func (a *applier) ProcessBroadcastElement(ctx weir.KeyedBroadcastSideContext[string], c command, out weir.Collector[string]) error {
	a.bctx = ctx
	switch c.Op {
	case "scale":
		return weir.ApplyToKeyedState(ctx, sumDesc, func(_ string, s state.ValueState[int64]) error {
			v, _ := s.Value()
			s.Update(v * c.F)
			return nil
		})
	case "drop":
		return weir.ApplyToKeyedState(ctx, kindsDesc, func(_ string, m state.MapState[string, int64]) error {
			m.Remove(c.Kind)
			return nil
		})
	case "clear-odd":
		return weir.ApplyToKeyedState(ctx, sumDesc, func(_ string, s state.ValueState[int64]) error {
			if v, _ := s.Value(); v%2 != 0 {
				s.Clear()
			}
			return nil
		})
	case "report":
		return weir.ApplyToKeyedState(ctx, sumDesc, func(user string, s state.ValueState[int64]) error {
			v, _ := s.Value()
			out.Collect(fmt.Sprintf("report %d %s %d", c.F, user, v))
			return nil
		})
	}
	return fmt.Errorf("unknown command %q", c.Op)
}

func (a *applier) OnTimer(ctx weir.KeyedBroadcastOnTimerContext[string], ts int64, out weir.Collector[string]) error {
	if err := weir.ApplyToKeyedState(a.bctx, sumDesc, func(string, state.ValueState[int64]) error { return nil }); err == nil ||
		!strings.Contains(err.Error(), `ApplyToKeyedState of keyed state "sum" called outside ProcessBroadcastElement of *weir_test.applier`) {
		return fmt.Errorf("ApplyToKeyedState from OnTimer with a kept context: error %v, want one saying it is outside ProcessBroadcastElement", err)
	}
	v, ok := a.sum.Value()
	kinds := maps.Collect(a.kinds.All())
	out.Collect(fmt.Sprintf("final %s %d %v %v", ctx.CurrentKey(), v, ok, kinds))
	return nil
}

// applyModel computes the applier's output with plain maps.
func applyModel(events []event, cmds []command) []string {
	sums := map[string]int64{}
	kinds := map[string]map[string]int64{}
	users := map[string]bool{}
	for _, e := range events {
		users[e.User] = true
		sums[e.User] += e.Value
		if kinds[e.User] == nil {
			kinds[e.User] = map[string]int64{}
		}
		kinds[e.User][e.Kind]++
	}
	var out []string
	for _, c := range cmds {
		for u := range users {
			v, ok := sums[u]
			switch c.Op {
			case "scale":
				if ok {
					sums[u] = v * c.F
				}
			case "drop":
				delete(kinds[u], c.Kind)
			case "clear-odd":
				if ok && v%2 != 0 {
					delete(sums, u)
				}
			case "report":
				if ok {
					out = append(out, fmt.Sprintf("report %d %s %d", c.F, u, v))
				}
			}
		}
	}
	for u := range users {
		v, ok := sums[u]
		out = append(out, fmt.Sprintf("final %s %d %v %v", u, v, ok, kinds[u]))
	}
	return out
}

// TestApplyToKeyedState: commands on the broadcast side scale, clear and
// report every user's value state and drop an entry from every user's map
// state, after all events (the commands wait for them); reports and the
// final state equal a model's, on both backends and at parallelism 1 and
// 3. ApplyToKeyedState called from OnTimer with a context kept from
// ProcessBroadcastElement returns an error.
func TestApplyToKeyedState(t *testing.T) {
	rng := rand.New(rand.NewPCG(seed(t), 48))
	kinds := []string{"login", "buy", "sell", "view"}
	events := make([]event, 4000)
	for i := range events {
		events[i] = event{User: fmt.Sprintf("u%d", rng.IntN(500)), Kind: kinds[rng.IntN(len(kinds))], Value: rng.Int64N(100)}
	}
	cmds := []command{{Op: "report", F: 1}, {Op: "scale", F: 3}, {Op: "drop", Kind: kinds[rng.IntN(4)]},
		{Op: "clear-odd"}, {Op: "report", F: 2}, {Op: "scale", F: 1 + rng.Int64N(5)}, {Op: "report", F: 3}}
	want := applyModel(events, cmds)
	for _, backend := range []string{"hashmap", "pebble"} {
		for _, p := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/p=%d", backend, p), func(t *testing.T) {
				var processed atomic.Int64
				env := weir.NewEnvironment(weir.Config{Parallelism: p, StateBackend: backend, StateDir: t.TempDir()})
				ev := weir.KeyBy(weir.FromSlice(env, events), func(e event) string { return e.User })
				cs := weir.Map(weir.FromSlice(env, cmds).SetParallelism(1), func(c command) command {
					waitFor(&processed, int64(len(events)))
					return c
				}).SetParallelism(1)
				got := run(t, env, weir.ConnectBroadcast[string, event, command, string](ev, weir.BroadcastTo(cs), &applier{processed: &processed}))
				sameLines(t, "reports and final state", got, want)
			})
		}
	}
}
