package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/weirhq/weir"
)

// Reading is one sensor reading; TS is its event time in ms.
type Reading struct {
	Sensor string
	TS     int64
	Value  int64
}

// avg is an AggregateFunction: the mean of a window's values.
type avg struct{}

type sumCount struct{ Sum, N int64 }

func (avg) CreateAccumulator() sumCount        { return sumCount{} }
func (avg) Add(r Reading, a sumCount) sumCount { return sumCount{a.Sum + r.Value, a.N + 1} }
func (avg) GetResult(a sumCount) sumCount      { return a }
func (avg) Merge(a, b sumCount) sumCount       { return sumCount{a.Sum + b.Sum, a.N + b.N} }
func describe(kind, sensor string, w weir.TimeWindow) string {
	return fmt.Sprintf("%-8s %-9s [%d, %d)", kind, sensor, w.Start, w.End)
}

func main() {
	readings := flag.Int64("readings", 20000, "how many readings to generate")
	parallelism := flag.Int("parallelism", 2, "parallelism of the windows")
	backend := flag.String("state-backend", "hashmap", "hashmap or pebble")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	env := weir.NewEnvironment(weir.Config{Parallelism: *parallelism, StateBackend: *backend})
	sensors := []string{"boiler", "pump", "turbine", "valve"}
	// Time advances 1 ms per reading; most readings are up to 300 ms out of
	// order, one in fifty is 700 ms behind (within the allowed lateness of
	// the tumbling windows: a late firing) and one in fifty 3 s behind.
	raw := weir.Generate(env, *readings, 0, func(i int64) Reading {
		ts := i - (i*7919)%300
		switch i % 50 {
		case 0:
			ts = i - 3000 // too late even for late firings
		case 25:
			ts = i - 700 // often a late firing of its window
		}
		sensor := sensors[(i*31+i/7)%int64(len(sensors))]
		if sensor == "pump" && (i/2000)%2 == 1 {
			sensor = "boiler" // the pump reports in bursts of two seconds
		}
		return Reading{Sensor: sensor, TS: ts, Value: (i * 7) % 100}
	}).SetParallelism(1)
	events := weir.AssignTimestampsAndWatermarks(raw, weir.WatermarkStrategy[Reading]{
		Timestamp: func(r Reading) int64 { return r.TS },
		// A watermark after every reading that advances it (highest
		// timestamp - 300 ms - 1): the output depends only on the input's
		// order. Drop Generator for periodic watermarks (every 200 ms of
		// processing time, with MaxOutOfOrderness) as a live job would use.
		Generator: weir.PunctuatedWatermarks[Reading](300 * time.Millisecond),
	}).SetParallelism(1)
	bySensor := weir.KeyBy(events, func(r Reading) string { return r.Sensor })

	// A tumbling one-second mean; readings up to a second late fire the
	// window again with everything it holds; later ones go to the side output.
	late := weir.NewOutputTag[Reading]("too-late")
	tumbling := weir.Window(bySensor, weir.TumblingEventTimeWindows(time.Second)).
		AllowedLateness(time.Second).SideOutputLateData(late)
	means := weir.WindowAggregateProcess[string, Reading, sumCount, sumCount, string](tumbling, avg{},
		weir.ProcessWindowFunc[string, sumCount, string](func(c weir.WindowContext[string], a []sumCount, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s mean %.1f of %d", describe("tumbling", c.CurrentKey(), c.Window()), float64(a[0].Sum)/float64(a[0].N), a[0].N))
			return nil
		})).Name("mean per second")

	// The maximum over five seconds, every second.
	maxima := weir.WindowReduceProcess[string, Reading, string](
		weir.Window(bySensor, weir.SlidingEventTimeWindows(5*time.Second, time.Second)),
		func(a, b Reading) Reading { return map[bool]Reading{true: a, false: b}[a.Value >= b.Value] },
		weir.ProcessWindowFunc[string, Reading, string](func(c weir.WindowContext[string], m []Reading, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s max %d", describe("sliding", c.CurrentKey(), c.Window()), m[0].Value))
			return nil
		})).Name("max over 5s")

	// Sessions: runs of readings of a sensor less than 100 ms apart.
	sessions := weir.WindowProcess(weir.Window(bySensor, weir.EventTimeSessionWindows(100*time.Millisecond)),
		weir.ProcessWindowFunc[string, Reading, string](func(c weir.WindowContext[string], rs []Reading, out weir.Collector[string]) error {
			out.Collect(fmt.Sprintf("%s %d readings", describe("session", c.CurrentKey(), c.Window()), len(rs)))
			return nil
		})).Name("sessions")

	tooLate := weir.Map(weir.SideOutput(means, late), func(r Reading) string {
		return fmt.Sprintf("%-8s %-9s ts %d value %d", "late", r.Sensor, r.TS, r.Value)
	})
	lines, err := weir.ExecuteAndCollect(ctx, env, weir.Union(means, maxima, sessions, tooLate), "windows")
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	// Windows of different subtasks arrive interleaved: sort for reading.
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}
