package weir_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

// visit is one page view: a user on a site at a time.
type visit struct {
	Site string
	User string
	TS   int64
}

// userSet counts the distinct users of a window, as a Flink user writes it
// with a HashSet: Add and Merge change their accumulator in place.
type userSet struct{}

func (userSet) CreateAccumulator() map[string]bool { return map[string]bool{} }
func (userSet) Add(v visit, acc map[string]bool) map[string]bool {
	acc[v.User] = true
	return acc
}
func (userSet) GetResult(acc map[string]bool) int { return len(acc) }
func (userSet) Merge(a, b map[string]bool) map[string]bool {
	for u := range b {
		a[u] = true
	}
	return a
}

// mutableVisits are n visits to a few sites by many users, in time order
// (so that no visit is late), over windows of 1 s.
func mutableVisits(t *testing.T, n int) []visit {
	r := testseed.Rand(t, 44)
	in := make([]visit, n)
	for i := range in {
		in[i] = visit{Site: fmt.Sprintf("site-%d", r.IntN(4)), User: fmt.Sprintf("user-%d", r.IntN(5000)), TS: int64(i) / 50}
	}
	return in
}

// distinctUsers is the reference: per site and window of size and slide
// (ms), the number of distinct users, as "site start count".
func distinctUsers(in []visit, size, slide int64) []string {
	type win struct {
		site  string
		start int64
	}
	sets := map[win]map[string]bool{}
	for _, v := range in {
		for start := v.TS - v.TS%slide; start > v.TS-size; start -= slide {
			w := win{v.Site, start}
			if sets[w] == nil {
				sets[w] = map[string]bool{}
			}
			sets[w][v.User] = true
		}
	}
	var out []string
	for w, s := range sets {
		out = append(out, fmt.Sprintf("%s %d %d", w.site, w.start, len(s)))
	}
	slices.Sort(out)
	return out
}

// mutableEnv is a hashmap-state environment checkpointing every 10 ms (the least the coordinator allows).
func mutableEnv(t *testing.T) *weir.Environment {
	return weir.NewEnvironment(weir.Config{Parallelism: 2, StateBackend: "hashmap",
		Checkpointing: &weir.CheckpointConfig{Interval: 10 * time.Millisecond, Dir: t.TempDir()}})
}

// inChild runs the test body in a child process of the test binary when it
// is not one already, and fails if the child fails, crashes or reports a
// data race: a "concurrent map iteration and map write" is a fatal error
// that no recover catches, and it would end this process with every test
// in it. It returns true in the child, which then runs the body.
func inChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv("WEIR_MUTABLE_CHILD") == t.Name() {
		return true
	}
	// The child's randomized input comes from this seed, logged here.
	seed := testseed.New(t)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "WEIR_MUTABLE_CHILD="+t.Name(), fmt.Sprintf("WEIR_SEED=%d", seed))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := out.String()
	for _, bad := range []string{"fatal error", "DATA RACE", "panic:"} {
		if strings.Contains(s, bad) {
			t.Fatalf("the job's process reported %q (exit: %v):\n%s", bad, err, lastBytes(s, 4000))
		}
	}
	if err != nil {
		t.Fatalf("the child test failed: %v\n%s", err, lastBytes(s, 4000))
	}
	t.Logf("child:\n%s", lastBytes(s, 1000))
	return false
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// A window AggregateFunction whose Add and Merge change a map accumulator in
// place gives the right distinct counts with checkpoints every
// 10 ms on the hashmap backend, for tumbling and sliding windows (the
// sliced operator), instead of crashing the process with "concurrent map
// iteration and map write" (a fatal error, hence the child process).
func TestWindowAggregateMutatesAccumulatorInPlace(t *testing.T) {
	if !inChild(t) {
		return
	}
	in := mutableVisits(t, 200000)
	for _, tc := range []struct {
		name        string
		size, slide int64
	}{{"tumbling", 1000, 1000}, {"sliding", 1000, 250}} {
		t.Run(tc.name, func(t *testing.T) {
			env := mutableEnv(t)
			src := weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, in).SetParallelism(1), weir.WatermarkStrategy[visit]{
				Timestamp: func(v visit) int64 { return v.TS },
				Generator: weir.PunctuatedWatermarks[visit](0)}).SetParallelism(1)
			var assigner weir.WindowAssigner = weir.TumblingEventTimeWindows(time.Duration(tc.size) * time.Millisecond)
			if tc.slide != tc.size {
				assigner = weir.SlidingEventTimeWindows(time.Duration(tc.size)*time.Millisecond, time.Duration(tc.slide)*time.Millisecond)
			}
			ws := weir.Window(weir.KeyBy(src, func(v visit) string { return v.Site }), assigner)
			res := weir.WindowAggregateProcess(ws, userSet{}, weir.ProcessWindowFunc[string, int, string](
				func(ctx weir.WindowContext[string], n []int, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("%s %d %d", ctx.CurrentKey(), ctx.Window().Start, n[0]))
					return nil
				}))
			got, err := weir.ExecuteAndCollect(context.Background(), env, res, "distinct-users-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if want := distinctUsers(in, tc.size, tc.slide); !slices.Equal(got, want) {
				t.Fatalf("%d windows, want %d; first differences: %v", len(got), len(want), lineDiff(got, want))
			}
		})
	}
}

// lineDiff names the first few lines in one list and not the other.
func lineDiff(got, want []string) string {
	g, w := map[string]bool{}, map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	for _, s := range want {
		w[s] = true
	}
	var extra, missing []string
	for _, s := range slices.Sorted(maps.Keys(g)) {
		if !w[s] && len(extra) < 5 {
			extra = append(extra, s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(w)) {
		if !g[s] && len(missing) < 5 {
			missing = append(missing, s)
		}
	}
	return fmt.Sprintf("extra %q, missing %q", extra, missing)
}

// codecOf is codec.For for types whose codec always derives.
func codecOf[T any]() codec.Codec[T] {
	c, err := codec.For[T]()
	if err != nil {
		panic(err)
	}
	return c
}

// tally is a pointer accumulator.
type tally struct {
	N     int64
	Users []string
}

// inPlaceKeyed keeps, per site, what it saw in every keyed state kind, each
// value changed in place after it was read and then written back, as a Flink
// user does with a HashSet or a POJO: value state of a map, of a pointer
// and (with TTL) of a slice, list state of maps, map state of slices (string
// user keys, a Go map) and of maps (integer user keys, the heap backend's
// own array), reducing and aggregating state of maps.
type inPlaceKeyed struct {
	users    state.ValueState[map[string]bool]
	tally    state.ValueState[*tally]
	seen     state.ValueState[[]int64]
	lists    state.ListState[map[string]int]
	perUser  state.MapState[string, []int64]
	byBucket state.MapState[int64, map[string]bool]
	reduced  state.ReducingState[map[string]bool]
	agg      state.AggregatingState[visit, int]
}

func (f *inPlaceKeyed) Open(ctx weir.KeyedRuntimeContext) error {
	st := ctx.State()
	f.users = state.GetValueState(st, state.ValueDescriptor[map[string]bool]{Name: "users", Codec: codecOf[map[string]bool]()})
	f.tally = state.GetValueState(st, state.ValueDescriptor[*tally]{Name: "tally", Codec: codecOf[*tally]()})
	f.seen = state.GetValueState(st, state.ValueDescriptor[[]int64]{Name: "seen", Codec: codecOf[[]int64](),
		TTL: &state.TTLConfig{TTL: time.Hour, Update: state.OnReadAndWrite}})
	f.lists = state.GetListState(st, state.ListDescriptor[map[string]int]{Name: "lists", Codec: codecOf[map[string]int]()})
	f.perUser = state.GetMapState(st, state.MapDescriptor[string, []int64]{Name: "per-user",
		UserKeyCodec: codec.String(), ValueCodec: codecOf[[]int64]()})
	f.byBucket = state.GetMapState(st, state.MapDescriptor[int64, map[string]bool]{Name: "by-bucket",
		UserKeyCodec: codec.Int64(), ValueCodec: codecOf[map[string]bool]()})
	f.reduced = state.GetReducingState(st, state.ReducingDescriptor[map[string]bool]{Name: "reduced", Codec: codecOf[map[string]bool](),
		Reduce: func(a, b map[string]bool) map[string]bool {
			for u := range b {
				a[u] = true
			}
			return a
		}})
	f.agg = state.GetAggregatingState(st, state.AggregatingDescriptor[visit, map[string]bool, int]{Name: "agg", AccCodec: codecOf[map[string]bool](),
		Create: func() map[string]bool { return map[string]bool{} },
		Add:    func(v visit, acc map[string]bool) map[string]bool { acc[v.User] = true; return acc },
		Result: func(acc map[string]bool) int { return len(acc) }})
	return nil
}

func (f *inPlaceKeyed) ProcessElement(ctx weir.KeyedContext[string], v visit, out weir.Collector[string]) error {
	users, ok := f.users.Value()
	if !ok {
		users = map[string]bool{}
	}
	users[v.User] = true
	f.users.Update(users)

	tl, ok := f.tally.Value()
	if !ok {
		tl = &tally{}
	}
	tl.N++
	if len(tl.Users) < 100 {
		tl.Users = append(tl.Users, v.User)
	} else {
		tl.Users[tl.N%100] = v.User // overwrite in place
	}
	f.tally.Update(tl)

	seen, ok := f.seen.Value()
	if !ok {
		seen = make([]int64, 8)
	}
	seen[v.TS%8]++
	f.seen.Update(seen)

	l := f.lists.Get()
	if len(l) == 0 {
		l = []map[string]int{{}}
	}
	l[0][v.User]++
	f.lists.Update(l)

	pu, ok := f.perUser.Get(v.User)
	if !ok {
		pu = make([]int64, 2)
	}
	pu[0]++
	pu[1] = v.TS
	f.perUser.Put(v.User, pu)
	for _, p := range f.perUser.All() {
		p[1] = max(p[1], v.TS) // in place, not written back: heap and Pebble differ, the result reads p[0] only
		break
	}

	b, ok := f.byBucket.Get(v.TS / 100)
	if !ok {
		b = map[string]bool{}
	}
	b[v.User] = true
	f.byBucket.Put(v.TS/100, b)

	f.reduced.Add(map[string]bool{v.User: true})
	f.agg.Add(v)
	ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64 - 1)
	return nil
}

func (f *inPlaceKeyed) OnTimer(ctx weir.OnTimerContext[string], _ int64, out weir.Collector[string]) error {
	users, _ := f.users.Value()
	tl, _ := f.tally.Value()
	seen, _ := f.seen.Value()
	var total int64
	for _, n := range seen {
		total += n
	}
	l := f.lists.Get()
	visits := 0
	for _, n := range l[0] {
		visits += n
	}
	var perUser int64
	for _, p := range f.perUser.All() {
		perUser += p[0]
	}
	buckets := 0
	for _, b := range f.byBucket.All() {
		buckets += len(b)
	}
	red, _ := f.reduced.Get()
	agg, _ := f.agg.Get()
	out.Collect(fmt.Sprintf("%s users=%d tally=%d seen=%d lists=%d/%d perUser=%d buckets=%d reduced=%d agg=%d",
		ctx.CurrentKey(), len(users), tl.N, total, len(l[0]), visits, perUser, buckets, len(red), agg))
	return nil
}

// keyedReference is inPlaceKeyed's output computed directly.
func keyedReference(in []visit) []string {
	type site struct {
		users   map[string]bool
		buckets map[int64]map[string]bool
		n       int
	}
	sites := map[string]*site{}
	for _, v := range in {
		s := sites[v.Site]
		if s == nil {
			s = &site{users: map[string]bool{}, buckets: map[int64]map[string]bool{}}
			sites[v.Site] = s
		}
		s.users[v.User] = true
		if s.buckets[v.TS/100] == nil {
			s.buckets[v.TS/100] = map[string]bool{}
		}
		s.buckets[v.TS/100][v.User] = true
		s.n++
	}
	var out []string
	for name, s := range sites {
		buckets := 0
		for _, b := range s.buckets {
			buckets += len(b)
		}
		u := len(s.users)
		out = append(out, fmt.Sprintf("%s users=%d tally=%d seen=%d lists=%d/%d perUser=%d buckets=%d reduced=%d agg=%d",
			name, u, s.n, s.n, u, s.n, s.n, buckets, u, u))
	}
	slices.Sort(out)
	return out
}

// Every keyed state kind, holding maps, slices and pointers that the
// function changes in place, gives the reference's results with checkpoints
// every 10 ms on the hashmap backend (run with -race: the snapshots never
// read what the task writes).
func TestKeyedStateMutatedInPlace(t *testing.T) {
	if !inChild(t) {
		return
	}
	in := mutableVisits(t, 60000)
	env := mutableEnv(t)
	src := weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, in).SetParallelism(1), weir.WatermarkStrategy[visit]{
		Timestamp: func(v visit) int64 { return v.TS },
		Generator: weir.PunctuatedWatermarks[visit](0)}).SetParallelism(1)
	res := weir.ProcessKeyed[string, visit, string](weir.KeyBy(src, func(v visit) string { return v.Site }), &inPlaceKeyed{})
	got, err := weir.ExecuteAndCollect(context.Background(), env, res, "keyed-in-place")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := keyedReference(in); !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// visitLog keeps, per subtask, the visits per user in operator list
// state: one map, changed in place and written back.
type visitLog struct {
	log state.ListState[map[string]int]
}

func (f *visitLog) Open(ctx weir.RuntimeContext) error {
	f.log = state.GetOperatorListState(ctx.OperatorState(), state.ListDescriptor[map[string]int]{Name: "log", Codec: codecOf[map[string]int]()})
	return nil
}

func (f *visitLog) ProcessElement(_ weir.Context, v visit, out weir.Collector[int]) error {
	l := f.log.Get()
	if len(l) == 0 {
		l = []map[string]int{{}}
	}
	l[0][v.User]++
	f.log.Update(l)
	out.Collect(l[0][v.User])
	return nil
}

// Operator list state changed in place gives every user's visits counted
// once each (1, 2, ... n per user) with checkpoints every 10 ms.
func TestOperatorStateMutatedInPlace(t *testing.T) {
	if !inChild(t) {
		return
	}
	in := mutableVisits(t, 60000)
	env := mutableEnv(t)
	res := weir.Process[visit, int](weir.FromSlice(env, in).SetParallelism(1), &visitLog{}).SetParallelism(1)
	got, err := weir.ExecuteAndCollect(context.Background(), env, res, "operator-in-place")
	if err != nil {
		t.Fatal(err)
	}
	perUser := map[string]int{}
	var want []int
	for _, v := range in {
		perUser[v.User]++
		want = append(want, perUser[v.User])
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%d counts, want %d (first difference: %s)", len(got), len(want), lineDiff(itoa(got), itoa(want)))
	}
}

func itoa(ns []int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprint(n)
	}
	return out
}

// addTally merges visits into a pointer accumulator in place.
func addTally(a, b *tally) *tally {
	a.N += b.N
	a.Users = append(a.Users, b.Users...)
	return a
}

// distinctTally is a tally's distinct users.
func distinctTally(tl *tally) int {
	u := map[string]bool{}
	for _, s := range tl.Users {
		u[s] = true
	}
	return len(u)
}

// Window state changed in place: a reduce over pointers on session windows
// (merged sessions merge their accumulators), an aggregate of maps on
// sliding windows on the general window operator, and a process window
// function that sorts and changes its elements in place, with an evicting
// reduce; all with checkpoints every 10 ms, against the reference.
func TestWindowStateMutatedInPlace(t *testing.T) {
	if !inChild(t) {
		return
	}
	in := mutableVisits(t, 60000)
	source := func(env *weir.Environment) weir.DataStream[visit] {
		return weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, in).SetParallelism(1), weir.WatermarkStrategy[visit]{
			Timestamp: func(v visit) int64 { return v.TS },
			Generator: weir.PunctuatedWatermarks[visit](0)}).SetParallelism(1)
	}
	run := func(t *testing.T, name string, build func(env *weir.Environment) weir.DataStream[string]) []string {
		env := mutableEnv(t)
		got, err := weir.ExecuteAndCollect(context.Background(), env, build(env), name)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
	}
	t.Run("session-reduce-pointer", func(t *testing.T) {
		// Sessions of a 1 ms gap: one per site and run of visits (TS
		// steps by 1 ms every 50 visits, so each site has a single session).
		got := run(t, "sessions", func(env *weir.Environment) weir.DataStream[string] {
			ks := weir.Map(source(env), func(v visit) tvisit { return tvisit{Site: v.Site, T: &tally{N: 1, Users: []string{v.User}}} })
			ws := weir.Window(weir.KeyBy(ks, func(v tvisit) string { return v.Site }), weir.EventTimeSessionWindows(5*time.Millisecond))
			return weir.Map(weir.WindowReduce(ws, func(a, b tvisit) tvisit { a.T = addTally(a.T, b.T); return a }),
				func(v tvisit) string { return fmt.Sprintf("%s %d %d", v.Site, v.T.N, distinctTally(v.T)) })
		})
		counts := map[string]int{}
		users := map[string]map[string]bool{}
		for _, v := range in {
			counts[v.Site]++
			if users[v.Site] == nil {
				users[v.Site] = map[string]bool{}
			}
			users[v.Site][v.User] = true
		}
		var want []string
		for s, n := range counts {
			want = append(want, fmt.Sprintf("%s %d %d", s, n, len(users[s])))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("general-sliding-aggregate", func(t *testing.T) {
		restore := weir.ForceGeneralWindowOp(true)
		got := run(t, "general-sliding", func(env *weir.Environment) weir.DataStream[string] {
			ws := weir.Window(weir.KeyBy(source(env), func(v visit) string { return v.Site }), weir.SlidingEventTimeWindows(time.Second, 250*time.Millisecond))
			return weir.WindowAggregateProcess(ws, userSet{}, weir.ProcessWindowFunc[string, int, string](
				func(ctx weir.WindowContext[string], n []int, out weir.Collector[string]) error {
					out.Collect(fmt.Sprintf("%s %d %d", ctx.CurrentKey(), ctx.Window().Start, n[0]))
					return nil
				}))
		})
		restore()
		if want := distinctUsers(in, 1000, 250); !slices.Equal(got, want) {
			t.Fatalf("%d windows, want %d: %s", len(got), len(want), lineDiff(got, want))
		}
	})
	t.Run("process-and-evicting-reduce", func(t *testing.T) {
		got := run(t, "process", func(env *weir.Environment) weir.DataStream[string] {
			// Two sources: the process function changes its elements, which
			// must not be the evicting window's too.
			keyed := func() weir.KeyedStream[string, tvisit] {
				ks := weir.Map(source(env), func(v visit) tvisit { return tvisit{Site: v.Site, T: &tally{N: 1, Users: []string{v.User}}} })
				return weir.KeyBy(ks, func(v tvisit) string { return v.Site })
			}
			proc := weir.WindowProcess(weir.Window(keyed(), weir.TumblingEventTimeWindows(time.Second)), weir.ProcessWindowFunc[string, tvisit, string](
				func(ctx weir.WindowContext[string], els []tvisit, out weir.Collector[string]) error {
					slices.SortFunc(els, func(a, b tvisit) int { return strings.Compare(a.T.Users[0], b.T.Users[0]) })
					u := map[string]bool{}
					for _, e := range els {
						e.T.N++ // in place: the elements are the window's
						u[e.T.Users[0]] = true
					}
					out.Collect(fmt.Sprintf("%s %d %d", ctx.CurrentKey(), ctx.Window().Start, len(u)))
					return nil
				}))
			ev := weir.WindowReduce(weir.Window(keyed(), weir.TumblingEventTimeWindows(time.Second)).Evictor(weir.CountEvictor[tvisit](1<<30)),
				func(a, b tvisit) tvisit { a.T = addTally(a.T, b.T); return a })
			evs := weir.Map(ev, func(v tvisit) string { return fmt.Sprintf("%s %d %d", v.Site, v.T.N, distinctTally(v.T)) })
			return weir.Union(proc, weir.Map(evs, func(s string) string { return "evicting " + s }))
		})
		want := distinctUsers(in, 1000, 1000)
		type win struct {
			site  string
			start int64
		}
		n := map[win]int{}
		users := map[win]map[string]bool{}
		for _, v := range in {
			w := win{v.Site, v.TS - v.TS%1000}
			n[w]++
			if users[w] == nil {
				users[w] = map[string]bool{}
			}
			users[w][v.User] = true
		}
		for w, c := range n {
			want = append(want, fmt.Sprintf("evicting %s %d %d", w.site, c, len(users[w])))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%d results, want %d: %s", len(got), len(want), lineDiff(got, want))
		}
	})
}

// tvisit is a visit whose payload is a pointer.
type tvisit struct {
	Site string
	T    *tally
}
