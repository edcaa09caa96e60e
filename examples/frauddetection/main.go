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
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/state"
)

// The rule's thresholds.
const (
	smallAmount = 1.00
	largeAmount = 500.00
	window      = int64(time.Minute / time.Millisecond)
)

// Transaction is one card transaction; TS is its event time in ms.
type Transaction struct {
	Account string
	Amount  float64
	TS      int64
}

// Alert names the large transaction that followed a small one.
type Alert struct {
	Account string
	Amount  float64
	TS      int64
}

// Detector is the keyed process function: it sees the transactions of one
// account at a time (the current key) and keeps, per account, the time of
// the last transaction if it was small, and the timer that forgets it.
type Detector struct {
	small state.ValueState[int64] // ts of the previous transaction, if it was small
	timer state.ValueState[int64] // the timer registered to clear small
}

// Open declares the keyed state; Weir calls it once per subtask before the
// first element. (Detector is given as a pointer: each subtask gets its own
// copy, so the handles are per subtask.)
func (d *Detector) Open(ctx weir.KeyedRuntimeContext) error {
	d.small = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "small-ts", Codec: codec.Int64()})
	d.timer = state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "timer", Codec: codec.Int64()})
	return nil
}

// ProcessElement applies the rule to one transaction of the current account.
func (d *Detector) ProcessElement(ctx weir.KeyedContext[string], tx Transaction, out weir.Collector[Alert]) error {
	if prev, ok := d.small.Value(); ok && tx.Amount > largeAmount && tx.TS-prev <= window {
		out.Collect(Alert{Account: tx.Account, Amount: tx.Amount, TS: tx.TS})
	}
	// This transaction is now the previous one: forget the old.
	if t, ok := d.timer.Value(); ok {
		ctx.TimerService().DeleteEventTimeTimer(t)
		d.timer.Clear()
	}
	d.small.Clear()
	if tx.Amount < smallAmount {
		d.small.Update(tx.TS)
		t := tx.TS + window
		ctx.TimerService().RegisterEventTimeTimer(t)
		d.timer.Update(t)
	}
	return nil
}

// OnTimer makes Detector a weir.TimerFunction: it runs when the watermark
// passes the timer, a minute after a small transaction, and clears the
// account's state, so state does not grow with the number of accounts seen.
func (d *Detector) OnTimer(ctx weir.OnTimerContext[string], ts int64, out weir.Collector[Alert]) error {
	d.small.Clear()
	d.timer.Clear()
	return nil
}

// generate makes transaction i: ordinary amounts on a few accounts, one
// second apart, and every 1000 transactions a small one followed by a
// large one on one account, 30 s later (fraud) or 90 s later (not fraud:
// the timer cleared the small one).
func generate(i int64) Transaction {
	accounts := []string{"acc-1", "acc-2", "acc-3", "acc-4", "acc-5"}
	tx := Transaction{Account: accounts[i%5], Amount: float64(10 + (i*7919)%400), TS: i * 1000}
	switch i % 1000 {
	case 3: // small, on acc-4
		tx.Amount = 0.5
	case 33: // large on acc-4, 30 s after the small one: an alert
		tx.Account, tx.Amount = "acc-4", 900
	case 503: // small, on acc-4
		tx.Amount = 0.25
	case 593: // large on acc-4, 90 s later: too late for the rule
		tx.Account, tx.Amount = "acc-4", 800
	}
	// Keep acc-4 free of other transactions between the planted pairs.
	if tx.Account == "acc-4" && i%1000 != 3 && i%1000 != 33 && i%1000 != 503 && i%1000 != 593 {
		tx.Account = "acc-5"
	}
	return tx
}

func main() {
	n := flag.Int64("transactions", 5000, "how many transactions to generate")
	parallelism := flag.Int("parallelism", 2, "parallelism of the detector")
	backend := flag.String("state-backend", "hashmap", "hashmap or pebble")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	env := weir.NewEnvironment(weir.Config{Parallelism: *parallelism, StateBackend: *backend})
	// One generator subtask, so each account's transactions arrive in order.
	txs := weir.Generate(env, *n, 0, generate).SetParallelism(1).Name("transactions")
	withTime := weir.AssignTimestampsAndWatermarks(txs, weir.WatermarkStrategy[Transaction]{
		Timestamp: func(tx Transaction) int64 { return tx.TS },
	}).SetParallelism(1)
	byAccount := weir.KeyBy(withTime, func(tx Transaction) string { return tx.Account })
	alerts := weir.ProcessKeyed(byAccount, &Detector{}).Name("fraud detector").UID("fraud-detector")

	out, err := weir.ExecuteAndCollect(ctx, env, alerts, "fraud detection")
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	slices.SortFunc(out, func(a, b Alert) int { return int(a.TS - b.TS) })
	for _, a := range out {
		fmt.Printf("alert: %s paid %.2f at %s\n", a.Account, a.Amount, time.Duration(a.TS)*time.Millisecond)
	}
	fmt.Printf("%d alerts in %d transactions\n", len(out), *n)
}
