package network

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

func named(p *BufferPool, name string) *Buffer {
	b := p.TryRequest()
	if b == nil {
		panic("test pool empty")
	}
	b.Data = append(b.Data, name...)
	return b
}

// pollAll drains the gate and names what it returned, as "channel:buffer".
func pollAll(g *InputGate) string {
	var out []string
	for {
		c, b, ok := g.Poll()
		if !ok {
			return strings.Join(out, " ")
		}
		out = append(out, fmt.Sprintf("%d:%s", c.Channel, b.Data))
	}
}

func notified(g *InputGate) bool {
	select {
	case <-g.Notify():
		return true
	default:
		return false
	}
}

func TestGatePollOrder(t *testing.T) {
	pool := NewBufferPool(32, 64)
	rp := NewResultPartition(3, pool)
	g := NewInputGate()
	if _, _, ok := g.Poll(); ok {
		t.Fatal("empty gate returned a buffer")
	}
	// Channel 2's producer finishes a buffer before the consumer connects.
	rp.Subs[2].Add(named(pool, "c0"))
	if rp.Subs[2].Backlog() != 1 {
		t.Fatalf("backlog %d before connect, want 1", rp.Subs[2].Backlog())
	}
	chans := make([]*InputChannel, 3)
	for i := range chans {
		chans[i] = Connect(rp.Subs[i], g, 0, i, 2)
	}
	if len(g.Channels()) != 3 || g.Channels()[1] != chans[1] || chans[1].Channel != 1 {
		t.Fatal("Channels does not list the channels in connect order")
	}
	if !notified(g) {
		t.Fatal("delivering the backlog on connect did not notify")
	}
	if notified(g) {
		t.Fatal("notification not coalesced")
	}
	for _, n := range []string{"a1", "a2", "a3"} {
		rp.Subs[0].Add(named(pool, n))
	}
	rp.Subs[1].Add(named(pool, "b1"))
	rp.Subs[2].Add(named(pool, "c1"))
	rp.Subs[2].Add(named(pool, "c2")) // no credit left: backlog
	if got := rp.Subs[0].Backlog(); got != 1 {
		t.Fatalf("channel 0 backlog %d, want 1 (a3)", got)
	}
	// Ready channels are served round robin, each channel in FIFO order.
	if got, want := pollAll(g), "2:c0 0:a1 1:b1 2:c1 0:a2"; got != want {
		t.Fatalf("poll order\n got %s\nwant %s", got, want)
	}
	notified(g)
	// Returning credit releases the backlog, in order, channel by channel.
	chans[0].ReturnCredit()
	if !notified(g) {
		t.Fatal("credit that released a buffer did not notify")
	}
	chans[2].ReturnCredit()
	chans[1].ReturnCredit() // nothing waiting: credit is kept
	if notified(g) != true {
		t.Fatal("no notification after c2 was released")
	}
	rp.Subs[1].Add(named(pool, "b2"))
	if got, want := pollAll(g), "0:a3 2:c2 1:b2"; got != want {
		t.Fatalf("poll order after credit\n got %s\nwant %s", got, want)
	}
	for i, s := range rp.Subs {
		if s.Backlog() != 0 {
			t.Errorf("sub %d backlog %d", i, s.Backlog())
		}
	}
}

func TestGateTwoInputs(t *testing.T) {
	pool := NewBufferPool(8, 64)
	left, right := NewResultPartition(1, pool), NewResultPartition(1, pool)
	g := NewInputGate()
	cl := Connect(left.Subs[0], g, 0, 0, 1)
	cr := Connect(right.Subs[0], g, 1, 0, 1)
	right.Subs[0].Add(named(pool, "r1"))
	left.Subs[0].Add(named(pool, "l1"))
	c, b, ok := g.Poll()
	if !ok || c != cr || c.Input != 1 || string(b.Data) != "r1" {
		t.Fatalf("first poll: %v %v %v", c, b, ok)
	}
	c, b, ok = g.Poll()
	if !ok || c != cl || c.Input != 0 || string(b.Data) != "l1" {
		t.Fatalf("second poll: %v %v %v", c, b, ok)
	}
}

// TestGateStress runs several producers, each through its own subpartition
// and pool, into one gate. The consumer polls, sometimes holds buffers for a
// while (out of order across channels), recycles and returns credit. It
// checks per-channel FIFO order, that nothing is lost or duplicated, and that
// a channel never holds more buffers than the credit it granted.
func TestGateStress(t *testing.T) {
	seed := testseed.New(t)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const producers = 5
	perProducer := 3000
	if testing.Short() {
		perProducer = 300
	}
	credits := make([]int, producers)
	pools := make([]*BufferPool, producers)
	subs := make([]*Subpartition, producers)
	g := NewInputGate()
	chans := make([]*InputChannel, producers)
	for i := range producers {
		credits[i] = 1 + rng.IntN(3)
		pools[i] = NewBufferPool(1+rng.IntN(5), 64)
		subs[i] = NewResultPartition(1, pools[i]).Subs[0]
		chans[i] = Connect(subs[i], g, 0, i, credits[i])
	}
	cancel := make(chan struct{})
	var wg sync.WaitGroup
	for i := range producers {
		pseed := rng.Uint64()
		wg.Go(func() {
			r := rand.New(rand.NewPCG(pseed, uint64(i)))
			for seq := range perProducer {
				b, err := pools[i].Request(cancel)
				if err != nil {
					return
				}
				b.Data = binary.LittleEndian.AppendUint32(b.Data, uint32(i))
				b.Data = binary.LittleEndian.AppendUint32(b.Data, uint32(seq))
				subs[i].Add(b)
				if r.IntN(50) == 0 {
					time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
				}
			}
		})
	}
	defer func() { close(cancel); wg.Wait() }()

	var (
		next     = make([]int, producers) // next expected sequence number per channel
		returned = make([]int, producers) // credits returned per channel
		holding  []held
		total    = producers * perProducer
		got      int
	)
	release := func(h held) {
		h.b.Recycle()
		h.c.ReturnCredit()
		returned[h.c.Channel]++
	}
	checkCredit := func() {
		for i, c := range chans {
			granted := credits[i] + returned[i]
			g.mu.Lock()
			queued := len(c.queue)
			g.mu.Unlock()
			subs[i].mu.Lock()
			sent := subs[i].ledger.sent
			subs[i].mu.Unlock()
			if sent > int64(granted) {
				t.Fatalf("channel %d: %d buffers sent with %d credits granted", i, sent, granted)
			}
			// Delivered but not yet handed back: queued in the gate or
			// held by the consumer. Never more than the initial credit.
			if held := next[i] - returned[i]; queued+held > credits[i] {
				t.Fatalf("channel %d: %d queued + %d held > %d initial credits", i, queued, held, credits[i])
			}
		}
	}
	deadline := time.After(60 * time.Second)
	for got < total {
		c, b, ok := g.Poll()
		if !ok {
			// Hand everything back before waiting, or the producers may starve.
			for _, h := range holding {
				release(h)
			}
			holding = holding[:0]
			select {
			case <-g.Notify():
			case <-deadline:
				t.Fatalf("stuck after %d of %d buffers; next %v", got, total, next)
			}
			continue
		}
		if len(b.Data) != 8 {
			t.Fatalf("buffer of %d bytes", len(b.Data))
		}
		p := int(binary.LittleEndian.Uint32(b.Data))
		seq := int(binary.LittleEndian.Uint32(b.Data[4:]))
		if p != c.Channel {
			t.Fatalf("buffer of producer %d arrived on channel %d", p, c.Channel)
		}
		if seq != next[p] {
			t.Fatalf("channel %d: got buffer %d, want %d", p, seq, next[p])
		}
		// Consumed buffers never exceed credit: buffer seq needed credit seq+1.
		if seq+1 > credits[p]+returned[p] {
			t.Fatalf("channel %d: buffer %d delivered with only %d credits granted", p, seq, credits[p]+returned[p])
		}
		next[p]++
		got++
		holding = append(holding, held{c, b})
		if got%16 == 0 {
			checkCredit()
		}
		// Release held buffers in random order, sometimes keeping a few.
		for len(holding) > 0 && rng.IntN(3) != 0 {
			k := rng.IntN(len(holding))
			release(holding[k])
			holding[k] = holding[len(holding)-1]
			holding = holding[:len(holding)-1]
		}
	}
	for _, h := range holding {
		release(h)
	}
	checkCredit()
	wg.Wait()
	if c, b, ok := g.Poll(); ok {
		t.Fatalf("extra buffer %q on channel %d", b.Data, c.Channel)
	}
	for i, p := range pools {
		if p.InUse() != 0 {
			t.Errorf("pool %d: %d buffers still out", i, p.InUse())
		}
		if p.MaxInUse() > p.Capacity() {
			t.Errorf("pool %d: MaxInUse %d > Capacity %d", i, p.MaxInUse(), p.Capacity())
		}
	}
}

type held struct {
	c *InputChannel
	b *Buffer
}

// pollNamed drains the gate and names what came out ("ch:data" or "ch:kind").
func pollNamed(g *InputGate) []string {
	var out []string
	for {
		c, b, ok := g.Poll()
		if !ok {
			return out
		}
		name := string(b.Data)
		if b.IsEvent() {
			name = b.Kind.String()
			if b.Kind == KindBarrier {
				name = fmt.Sprintf("barrier(overtook %d)", b.Overtaken)
			}
		} else {
			b.Recycle()
			c.ReturnCredit()
		}
		out = append(out, fmt.Sprintf("%d:%s", c.Index, name))
	}
}

func TestGateBlockAndPriority(t *testing.T) {
	pool := NewBufferPool(16, 64)
	rp := NewResultPartition(2, pool)
	g := NewInputGate()
	Connect(rp.Subs[0], g, 0, 0, 4)
	Connect(rp.Subs[1], g, 0, 1, 1)
	data := func(sub int, s string) {
		b := pool.TryRequest()
		b.Data = append(b.Data, s...)
		rp.Subs[sub].Add(b)
	}
	data(0, "a1")
	data(1, "b1")
	data(0, "a2")
	data(1, "b2") // waits for credit in channel 1's backlog
	g.Block(g.Channels()[0])
	// b1's credit comes back as it is polled and releases b2.
	if got := fmt.Sprint(pollNamed(g)); got != "[1:b1 1:b2]" {
		t.Fatalf("with channel 0 blocked: %s", got)
	}
	// A priority barrier on blocked channel 0 waits; once unblocked it comes
	// out first and says it overtook a1 and a2.
	over := rp.Subs[0].AddPriority(NewBarrier(Barrier{ID: 1, Unaligned: true}))
	if len(over) != 0 {
		t.Fatalf("channel 0 had no backlog, got %d overtaken", len(over))
	}
	if got := fmt.Sprint(pollNamed(g)); got != "[]" {
		t.Fatalf("priority on a blocked channel: %s", got)
	}
	g.Unblock(g.Channels()[0])
	if got := fmt.Sprint(pollNamed(g)); got != "[0:barrier(overtook 2) 0:a1 0:a2]" {
		t.Fatalf("after unblock: %s", got)
	}
	// A priority event on channel 1 overtakes its backlog at the sender.
	data(1, "b3")
	data(1, "b4")
	data(1, "b5")
	over = rp.Subs[1].AddPriority(NewBarrier(Barrier{ID: 2, Unaligned: true}))
	var names []string
	for _, o := range over {
		names = append(names, string(o.Data))
	}
	if fmt.Sprint(names) != "[b4 b5]" {
		t.Fatalf("sender overtook %v, want [b4 b5] (b3 had credit)", names)
	}
	if got := fmt.Sprint(pollNamed(g)); got != "[1:barrier(overtook 1) 1:b3 1:b4 1:b5]" {
		t.Fatalf("priority with backlog: %s", got)
	}
}

func TestBarrierEventRoundTrip(t *testing.T) {
	br := Barrier{ID: 7, Timestamp: -3, Unaligned: true, AtLeastOnce: true, Kind: 2, AlignedTimeout: 1500}
	if got := NewBarrier(br).Barrier(); got != br {
		t.Fatalf("got %+v, want %+v", got, br)
	}
	if got := NewCancelCheckpoint(-9).CheckpointID(); got != -9 {
		t.Fatal(got)
	}
}

// An aligned barrier that timed out is promoted where it waits: in the
// sender's backlog (its onSent hook runs after the overtaken data was
// kept) and in the receiver's queue (it goes first and says how many data
// buffers it overtook there).
func TestPromoteBarrier(t *testing.T) {
	pool := NewBufferPool(16, 64)
	rp := NewResultPartition(1, pool)
	g := NewInputGate()
	var announced []int64
	g.SetAnnounce(func(br Barrier) { announced = append(announced, br.ID) })
	Connect(rp.Subs[0], g, 0, 0, 2)
	data := func(s string) {
		b := pool.TryRequest()
		b.Data = append(b.Data, s...)
		rp.Subs[0].Add(b)
	}
	var events []string
	barrier := func(id int64) {
		b := NewBarrier(Barrier{ID: id, AlignedTimeout: 5})
		b.SetOnSent(func() { events = append(events, fmt.Sprintf("sent %d", id)) })
		rp.Subs[0].Add(b)
	}
	data("a1")
	barrier(1) // queued at the receiver behind a1
	data("a2")
	data("a3") // a3 waits for credit
	barrier(2) // in the backlog behind a3
	data("a4")
	if fmt.Sprint(events, announced) != "[sent 1] [1]" {
		t.Fatalf("before promotion: %v, announced %v", events, announced)
	}
	// Barrier 1 times out first: queued at the receiver, it goes ahead of
	// a1 there; the sender no longer holds it.
	if n := g.PromoteBarrier(1); n != 1 {
		t.Fatalf("promoted barrier 1 in %d channels, want 1", n)
	}
	if rp.Subs[0].PromoteBarrier(1, func([]InFlight) { t.Error("barrier 1 was already sent") }) {
		t.Fatal("promoted a barrier the sender no longer holds")
	}
	// Barrier 2 is still in the sender's backlog behind a3: promoted, it
	// overtakes a3 there (kept before its hook runs) and a2 at the receiver.
	if !rp.Subs[0].PromoteBarrier(2, func(over []InFlight) {
		var kept []string
		for _, o := range over {
			kept = append(kept, string(o.Data))
		}
		events = append(events, fmt.Sprintf("kept %q", kept))
	}) {
		t.Fatal("barrier 2 not promoted")
	}
	if want := `[sent 1 kept ["a3"] sent 2]`; fmt.Sprint(events) != want {
		t.Fatalf("events %v, want %s", events, want)
	}
	if g.PromoteBarrier(2) != 0 {
		t.Fatal("a priority barrier was promoted again")
	}
	want := "[0:barrier(overtook 1) 0:barrier(overtook 2) 0:a1 0:a2 0:a3 0:a4]"
	if got := fmt.Sprint(pollNamed(g)); got != want {
		t.Fatalf("polled %v, want %s", got, want)
	}
}

// A barrier alone in its channel's queue, promoted, leaves nothing for
// the ready list: polling takes the barrier and then finds nothing.
func TestPromoteLastQueuedBarrier(t *testing.T) {
	rp := NewResultPartition(1, NewBufferPool(4, 64))
	g := NewInputGate()
	Connect(rp.Subs[0], g, 0, 0, 2)
	rp.Subs[0].Add(NewBarrier(Barrier{ID: 1, AlignedTimeout: 5}))
	if g.PromoteBarrier(1) != 1 {
		t.Fatal("not promoted")
	}
	if got := fmt.Sprint(pollNamed(g)); got != "[0:barrier(overtook 0)]" {
		t.Fatalf("polled %s", got)
	}
}
