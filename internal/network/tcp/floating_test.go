package tcp

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
)

// TestFloatingCredit (decision 19): a remote channel whose producer's
// backlog exceeds its exclusive credit takes floating buffers from its
// gate's pool, never more than the pool holds, so more of the backlog
// reaches the consumer before it reads; with a second channel of the gate
// backed up too, both deliver everything in order, never holding more
// floating buffers than the gate has; once the backlog is gone the
// floating buffers go back to the gate's pool (and to the network memory
// when it closes).
func TestFloatingCredit(t *testing.T) {
	checkGoroutines(t)
	const size, floatingMax, n = 256, 3, 8
	pc, cc := identity("producer"), identity("consumer")
	for _, c := range []*Config{&pc, &cc} {
		c.BufferSize, c.BuffersPerChannel = size, 1
	}
	s := startServer(t, pc)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(2, network.NewBufferPool(2*n, size))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, func(sub int, err error) { t.Errorf("subpartition %d failed: %v", sub, err) }); err != nil {
		t.Fatal(err)
	}
	add := func(sub, k int) {
		b, err := rp.Pool.Request(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Data = append(b.Data[:0], fmt.Sprintf("%d-%d", sub, k)...)
		rp.Subs[sub].Add(b)
	}
	// The backlog is there before the request: the first BUFFER tells it.
	for k := range n {
		add(0, k)
	}
	budget := network.NewBudget(1 << 20)
	floating, err := budget.NewPool(0, floatingMax, size)
	if err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	var chans []*Channel
	for sub := range 2 {
		ch, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Subpartition: sub, Gate: g, Channel: sub, Floating: floating,
			Fail: func(err error) { t.Errorf("channel %d failed: %v", sub, err) }})
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	waitFor(t, "the requests", func() bool { return attached(s, 2) })
	// Channel 0: its one exclusive buffer and every floating buffer of the
	// gate, and no more, while the consumer reads nothing.
	in0 := chans[0].Input()
	waitFor(t, "channel 0 to queue 1+floating buffers", func() bool { return in0.Queued() == 1+floatingMax })
	time.Sleep(20 * time.Millisecond)
	if q, used := in0.Queued(), floating.InUse(); q != 1+floatingMax || used != floatingMax {
		t.Fatalf("channel 0 queued %d buffers with %d floating ones out; want %d and %d", q, used, 1+floatingMax, floatingMax)
	}
	if backlog := rp.Subs[0].Backlog(); backlog != n-1-floatingMax {
		t.Errorf("the producer's backlog is %d, want %d", backlog, n-1-floatingMax)
	}
	// Channel 1 backs up too; as channel 0's buffers are read and
	// recycled, both channels deliver everything in order.
	for k := range n {
		add(1, k)
	}
	next := [2]int{}
	for next[0] < n || next[1] < n {
		c, b := pollOne(t, g, 5*time.Second)
		if want := fmt.Sprintf("%d-%d", c.Index, next[c.Index]); string(b.Data) != want {
			t.Fatalf("channel %d delivered %q, want %q", c.Index, b.Data, want)
		}
		next[c.Index]++
		if used := floating.InUse(); used > floatingMax {
			t.Fatalf("%d floating buffers out, the gate has %d", used, floatingMax)
		}
		b.Recycle()
		c.ReturnCredit()
	}
	// The backlog is gone: no floating buffer is filled or queued; at
	// most the ones granted as credit are still held by their channels.
	held := 0
	conn.mu.Lock()
	for _, ch := range chans {
		held += len(ch.floating)
	}
	conn.mu.Unlock()
	if used := floating.InUse(); used != held {
		t.Errorf("%d floating buffers out after the backlog is gone, %d of them held as credit", used, held)
	}
	for sub := range 2 {
		rp.Subs[sub].Add(network.NewEndOfPartition())
	}
	for range 2 {
		if _, b := pollOne(t, g, 5*time.Second); b.Kind != network.KindEndOfPartition {
			t.Fatalf("delivered %s, want end of partition", b.Kind)
		}
	}
	waitFor(t, "the floating buffers to go back", func() bool { return floating.InUse() == 0 })
	floating.Close()
	if u := budget.Used(); u != 0 {
		t.Errorf("the network memory holds %d bytes after the gate's pool closed", u)
	}
}

// TestNoFloatingCredit: without a gate pool a channel holds its exclusive
// credit and no more (the reference for TestFloatingCredit).
func TestNoFloatingCredit(t *testing.T) {
	checkGoroutines(t)
	pc, cc := identity("producer"), identity("consumer")
	for _, c := range []*Config{&pc, &cc} {
		c.BufferSize, c.BuffersPerChannel = 256, 1
	}
	s := startServer(t, pc)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(1, network.NewBufferPool(8, 256))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, nil); err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	ch, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Gate: g})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		b, _ := rp.Pool.Request(nil)
		b.Data = append(b.Data[:0], 'x')
		rp.Subs[0].Add(b)
	}
	waitFor(t, "one buffer", func() bool { return ch.Input().Queued() == 1 })
	time.Sleep(20 * time.Millisecond)
	if q := ch.Input().Queued(); q != 1 {
		t.Errorf("queued %d buffers with one exclusive credit and no floating ones", q)
	}
	if b := rp.Subs[0].Backlog(); b != 3 {
		t.Errorf("the producer's backlog is %d, want 3", b)
	}
}
