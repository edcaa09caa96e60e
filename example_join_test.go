package weir_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"slices"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// Order and Payment are the two sides of the join examples; TS is event
// time in ms.
type Order struct {
	ID   string
	Item string
	TS   int64
}

type Payment struct {
	Order  string
	Amount int64
	TS     int64
}

func orderStream(env *weir.Environment, os ...Order) weir.DataStream[Order] {
	return weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, os), weir.WatermarkStrategy[Order]{
		Timestamp: func(o Order) int64 { return o.TS },
		Generator: weir.PunctuatedWatermarks[Order](0),
	})
}

func paymentStream(env *weir.Environment, ps ...Payment) weir.DataStream[Payment] {
	return weir.AssignTimestampsAndWatermarks(weir.FromSlice(env, ps), weir.WatermarkStrategy[Payment]{
		Timestamp: func(p Payment) int64 { return p.TS },
		Generator: weir.PunctuatedWatermarks[Payment](0),
	})
}

// IntervalJoin joins each element of the left keyed stream with the right
// elements of its key whose time is within bounds of its own: here,
// payments made up to 10 ms after the order.
func ExampleIntervalJoin() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	orders := weir.KeyBy(orderStream(env, Order{"o1", "book", 1}, Order{"o2", "pen", 5}, Order{"o3", "ink", 8}),
		func(o Order) string { return o.ID })
	payments := weir.KeyBy(paymentStream(env, Payment{"o1", 12, 4}, Payment{"o2", 3, 30}, Payment{"o3", 9, 18}),
		func(p Payment) string { return p.Order })
	paid := weir.ProcessIntervalJoin(weir.IntervalJoin(orders, payments).Between(0, 10*time.Millisecond),
		weir.ProcessJoinFunc[Order, Payment, string](func(ctx weir.ProcessJoinContext, o Order, p Payment, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s %s paid %d at %d", o.ID, o.Item, p.Amount, ctx.Timestamp()))
			return nil
		}))
	out, err := weir.ExecuteAndCollect(context.Background(), env, paid, "interval join")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(out) // keys run on two subtasks
	for _, l := range out {
		fmt.Println(l)
	}
	// Output:
	// o1 book paid 12 at 4
	// o3 ink paid 9 at 18
}

// Join joins two streams on equal keys within the same window (Flink's
// a.join(b).where(..).equalTo(..).window(..)); WindowJoin calls the join
// function for every pair of a window.
func ExampleWindowJoin() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	orders := orderStream(env, Order{"o1", "book", 1}, Order{"o2", "pen", 5}, Order{"o3", "ink", 12})
	payments := paymentStream(env, Payment{"o1", 12, 4}, Payment{"o2", 3, 11}, Payment{"o3", 4, 15}, Payment{"o3", 5, 16})
	joined := weir.Join(orders, payments, func(o Order) string { return o.ID }, func(p Payment) string { return p.Order }).
		Window(weir.TumblingEventTimeWindows(10 * time.Millisecond))
	paid := weir.WindowJoin(joined, weir.JoinFunc[Order, Payment, string](func(o Order, p Payment, out weir.Collector[string]) error {
		out.Collect(fmt.Sprintf("%s %s paid %d", o.ID, o.Item, p.Amount))
		return nil
	}))
	out, err := weir.ExecuteAndCollect(context.Background(), env, paid, "window join")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(out)
	for _, l := range out {
		fmt.Println(l) // o2 is paid in another window: no pair
	}
	// Output:
	// o1 book paid 12
	// o3 ink paid 4
	// o3 ink paid 5
}

// Connect joins two streams of different types into one operator; CoMap
// maps each side to the output type.
func ExampleCoMap() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 1})
	words := weir.FromSlice(env, []string{"a", "b"})
	numbers := weir.FromSlice(env, []int64{1, 2})
	both := weir.CoMap(weir.Connect(words, numbers),
		func(w string) string { return "word " + w },
		func(n int64) string { return fmt.Sprint("number ", n) })
	out, err := weir.ExecuteAndCollect(context.Background(), env, both, "connect")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(out) // the two inputs interleave in any order
	fmt.Println(out)
	// Output: [number 1 number 2 word a word b]
}

// matcher pairs each order with its payment, whichever comes first: the
// two sides of connected keyed streams share the key's state.
type matcher struct {
	order   state.ValueState[Order]
	payment state.ValueState[Payment]
}

func (m *matcher) Open(ctx weir.KeyedRuntimeContext) error {
	m.order = state.GetValueState(ctx.State(), state.ValueDescriptor[Order]{Name: "order", Codec: codec.MustFor[Order]()})
	m.payment = state.GetValueState(ctx.State(), state.ValueDescriptor[Payment]{Name: "payment", Codec: codec.MustFor[Payment]()})
	return nil
}

func (m *matcher) ProcessElement1(ctx weir.KeyedContext[string], o Order, out weir.Collector[string]) error {
	if p, ok := m.payment.Value(); ok {
		out.Collect(fmt.Sprintf("%s %s paid %d", o.ID, o.Item, p.Amount))
		m.payment.Clear()
		return nil
	}
	m.order.Update(o)
	return nil
}

func (m *matcher) ProcessElement2(ctx weir.KeyedContext[string], p Payment, out weir.Collector[string]) error {
	if o, ok := m.order.Value(); ok {
		out.Collect(fmt.Sprintf("%s %s paid %d", o.ID, o.Item, p.Amount))
		m.order.Clear()
		return nil
	}
	m.payment.Update(p)
	return nil
}

// KeyedCoProcess runs a KeyedCoProcessFunction over two connected keyed
// streams (Flink's connect + keyBy + process): keyed state shared by both
// sides, and timers if the function implements TimerFunction.
func ExampleKeyedCoProcess() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	orders := weir.KeyBy(weir.FromSlice(env, []Order{{"o1", "book", 1}, {"o2", "pen", 2}}), func(o Order) string { return o.ID })
	payments := weir.KeyBy(weir.FromSlice(env, []Payment{{"o2", 3, 3}, {"o1", 12, 4}, {"o3", 1, 5}}), func(p Payment) string { return p.Order })
	paid := weir.KeyedCoProcess(weir.ConnectKeyed(orders, payments), &matcher{})
	out, err := weir.ExecuteAndCollect(context.Background(), env, paid, "co-process")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(out)
	fmt.Println(out)
	// Output: [o1 book paid 12 o2 pen paid 3]
}

// Rule is a broadcast element: the highest amount allowed for an item.
type Rule struct {
	Item  string
	Limit int64
}

var limitsDesc = state.BroadcastDescriptor[string, int64]{Name: "limits", KeyCodec: codec.String(), ValueCodec: codec.Int64()}

// overLimit keeps each order's amount in keyed state and checks it against
// the broadcast limits when the input ends, when every rule has arrived,
// whatever order the two inputs came in.
type overLimit struct {
	amounts state.ListState[int64]
}

func (f *overLimit) Open(ctx weir.KeyedRuntimeContext) error {
	f.amounts = state.GetListState(ctx.State(), state.ListDescriptor[int64]{Name: "amounts", Codec: codec.Int64()})
	return nil
}

// ProcessElement could read the broadcast state (read-only) from
// ctx.Broadcast(); here it only keeps the amount until the end of input.
func (f *overLimit) ProcessElement(ctx weir.KeyedBroadcastContext[string], p Payment, out weir.Collector[string]) error {
	f.amounts.Add(p.Amount)
	ctx.TimerService().RegisterEventTimeTimer(math.MaxInt64 - 1) // fires at the end of input
	return nil
}

// ProcessBroadcastElement runs on every subtask for every rule.
func (f *overLimit) ProcessBroadcastElement(ctx weir.KeyedBroadcastSideContext[string], r Rule, out weir.Collector[string]) error {
	state.GetBroadcastState(ctx.Broadcast(), limitsDesc).Put(r.Item, r.Limit)
	return nil
}

// OnTimer reads the broadcast state, read-only, from its context.
func (f *overLimit) OnTimer(ctx weir.KeyedBroadcastOnTimerContext[string], ts int64, out weir.Collector[string]) error {
	limit, ok := state.GetReadOnlyBroadcastState(ctx.Broadcast(), limitsDesc).Get(ctx.CurrentKey())
	for _, a := range f.amounts.Get() {
		if ok && a > limit {
			out.Collect(fmt.Sprintf("%s: %d over the limit of %d", ctx.CurrentKey(), a, limit))
		}
	}
	return nil
}

// ConnectBroadcast connects a keyed stream with a stream that every
// subtask receives in full (BroadcastTo), Flink's broadcast state pattern:
// rules arrive on the broadcast side and are kept in broadcast state, and
// the keyed elements are checked against them.
func ExampleConnectBroadcast() {
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	rules := weir.BroadcastTo(weir.FromSlice(env, []Rule{{"book", 20}, {"pen", 5}}))
	// Here the key is the item sold, in Payment.Order.
	sales := weir.KeyBy(weir.FromSlice(env, []Payment{{"book", 25, 1}, {"pen", 3, 2}, {"pen", 7, 3}, {"book", 15, 4}}),
		func(p Payment) string { return p.Order })
	alerts := weir.ConnectBroadcast(sales, rules, &overLimit{})
	out, err := weir.ExecuteAndCollect(context.Background(), env, alerts, "broadcast")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(out)
	for _, l := range out {
		fmt.Println(l)
	}
	// Output:
	// book: 25 over the limit of 20
	// pen: 7 over the limit of 5
}
