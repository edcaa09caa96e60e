package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/weirhq/weir"
)

// Impression is an ad shown to a user; TS is its event time in ms.
type Impression struct {
	Ad       int64
	Campaign string
	TS       int64
}

// Click is a user clicking an ad.
type Click struct {
	Ad int64
	TS int64
}

// Attributed is a click with the impression it came from.
type Attributed struct {
	Ad       int64
	Campaign string
	Delay    time.Duration
	TS       int64
}

var campaigns = []string{"spring", "summer", "autumn"}

// impression i is shown at i*100 ms, give or take 500 ms.
func impression(i int64) Impression {
	return Impression{Ad: i, Campaign: campaigns[i%3], TS: i*100 + (i*7919)%1000 - 500}
}

// Every second ad is clicked: a delay of 1 to 14 s after its impression
// (the ones over 10 s do not count), and every 50th click is of an ad
// never shown (a negative id).
func click(i int64) Click {
	ad := i * 2
	im := impression(ad)
	delay := 1000 + (i*104729)%13000
	if i%50 == 49 {
		ad = -ad - 1
	}
	return Click{Ad: ad, TS: im.TS + delay}
}

func main() {
	n := flag.Int64("impressions", 20000, "how many impressions to generate")
	parallelism := flag.Int("parallelism", 2, "parallelism of the join and the window")
	flag.Parse()

	env := weir.NewEnvironment(weir.Config{Parallelism: *parallelism})
	// Both inputs are at most a second out of order.
	impressions := weir.AssignTimestampsAndWatermarks(weir.Generate(env, *n, 0, impression).SetParallelism(1),
		weir.WatermarkStrategy[Impression]{Timestamp: func(im Impression) int64 { return im.TS }, MaxOutOfOrderness: time.Second}).SetParallelism(1)
	clicks := weir.AssignTimestampsAndWatermarks(weir.Generate(env, *n/2, 0, click).SetParallelism(1),
		weir.WatermarkStrategy[Click]{Timestamp: func(c Click) int64 { return c.TS }, MaxOutOfOrderness: time.Second}).SetParallelism(1)

	// A click joins an impression of its ad from 10 s before it up to the
	// same moment: impression.TS + 0 <= click.TS <= impression.TS + 10 s.
	joined := weir.IntervalJoin(
		weir.KeyBy(impressions, func(im Impression) int64 { return im.Ad }),
		weir.KeyBy(clicks, func(c Click) int64 { return c.Ad }),
	).Between(0, 10*time.Second)
	attributed := weir.ProcessIntervalJoin(joined, weir.ProcessJoinFunc[Impression, Click, Attributed](
		func(ctx weir.ProcessJoinContext, im Impression, c Click, out weir.Collector[Attributed]) error {
			// The pair's timestamp is the later of the two: the click's.
			out.Collect(Attributed{Ad: im.Ad, Campaign: im.Campaign, Delay: time.Duration(c.TS-im.TS) * time.Millisecond, TS: ctx.Timestamp()})
			return nil
		})).Name("attribute clicks")

	// Joined clicks per campaign and minute of event time.
	perMinute := weir.WindowProcess(
		weir.Window(weir.KeyBy(attributed, func(a Attributed) string { return a.Campaign }), weir.TumblingEventTimeWindows(time.Minute)),
		weir.ProcessWindowFunc[string, Attributed, string](func(ctx weir.WindowContext[string], as []Attributed, out weir.Collector[string]) error {
			var total time.Duration
			for _, a := range as {
				total += a.Delay
			}
			w := ctx.Window()
			out.Collect(fmt.Sprintf("minute %3d  %-7s %4d clicks, %v after the impression on average",
				w.Start/60000, ctx.CurrentKey(), len(as), (total / time.Duration(len(as))).Round(time.Millisecond)))
			return nil
		})).Name("clicks per minute")

	lines, err := weir.ExecuteAndCollect(context.Background(), env, perMinute, "intervaljoin")
	if err != nil {
		log.Fatal(err)
	}
	slices.Sort(lines) // windows of different keys arrive from different subtasks
	for _, l := range lines {
		fmt.Println(l)
	}
}
