package tcp

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/testseed"
)

// Priority events (unaligned checkpoint barriers) across processes,
// decision 21 of docs/distributed-runtime.md.

// TestPriorityQueueOrder: a priority event goes to the head of the
// writer's queue, ahead of every other channel's buffers and behind
// earlier priority events, taking along the buffers of its own channel
// that the ledger released before it, in their order; sequence numbers
// are those of the ledger's order, so each channel's frames stay in it.
func TestPriorityQueueOrder(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &serverConn{link: newLink(a, Peer{ID: "consumer"})}
	views := make([]*view, 3)
	for i := range views {
		views[i] = &view{c: c, id: uint32(i)}
		c.views = append(c.views, views[i])
	}
	wm := func(v int64) *network.Buffer { return network.NewWatermark(v) }
	// Delivery order: 0:a 1:a 0:b 2:a 1:b, then a priority event on 1,
	// then 2:b 0:c, then one on 0, then 1:c.
	views[0].Deliver(wm(1))
	views[1].Deliver(wm(2))
	views[0].Deliver(wm(3))
	views[2].Deliver(wm(4))
	views[1].Deliver(wm(5))
	views[1].DeliverPriority(network.NewBarrier(network.Barrier{ID: 1, Unaligned: true}))
	views[2].Deliver(wm(6))
	views[0].Deliver(wm(7))
	views[0].DeliverPriority(network.NewBarrier(network.Barrier{ID: 2, Unaligned: true}))
	views[1].Deliver(wm(8))
	var got []string
	for i, o := range c.queue {
		s := fmt.Sprintf("%d#%d:", o.v.id, o.seq)
		if o.b.Kind == network.KindBarrier {
			s += fmt.Sprintf("B%d", o.b.Barrier().ID)
		} else {
			s += fmt.Sprint(o.b.Watermark())
		}
		if o.priority != (o.b.Kind == network.KindBarrier) {
			t.Errorf("entry %d (%s): priority %t", i, s, o.priority)
		}
		got = append(got, s)
	}
	want := []string{
		"1#0:2", "1#1:5", "1#2:B1", // channel 1's released buffers, then its priority event
		"0#0:1", "0#1:3", "0#2:7", "0#3:B2", // then channel 0's, behind the earlier priority event
		"2#0:4", "2#1:6", "1#3:8", // the rest in delivery order
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writer queue\n got %v\nwant %v", got, want)
	}
	if c.prio != 7 {
		t.Errorf("priority part of %d entries, want 7", c.prio)
	}
}

// TestPriorityOvertakesBacklog: over loopback TCP, with three channels on
// one connection each holding more data than its credit, a priority
// barrier added right after the data reaches the consumer before the
// backlog, at the head of its channel, counting as Overtaken exactly the
// buffers the ledger had released (its credit's worth of data and the
// watermarks among them, which may still be on the wire when it is
// added); the channel state the producer keeps is the rest, which
// arrives after it.
func TestPriorityOvertakesBacklog(t *testing.T) {
	checkGoroutines(t)
	r := testseed.Rand(t, 21)
	const credit, chans = 2, 3
	pc, cc := identity("producer"), identity("consumer")
	for _, c := range []*Config{&pc, &cc} {
		c.BufferSize, c.BuffersPerChannel = 256, credit
	}
	s := startServer(t, pc)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(chans, network.NewBufferPool(64, 256))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, func(sub int, err error) { t.Errorf("subpartition %d failed: %v", sub, err) }); err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	var in []*network.InputChannel
	for sub := range chans {
		ch, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Subpartition: sub, Gate: g, Channel: sub,
			Fail: func(err error) { t.Errorf("channel %d failed: %v", sub, err) }})
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, ch.Input())
	}
	// Before anything: the request's credit has reached the producer.
	deadline := time.Now().Add(5 * time.Second)
	for !attached(s, chans) {
		if time.Now().After(deadline) {
			t.Fatal("the requests did not reach the producer")
		}
		time.Sleep(time.Millisecond)
	}
	inputs := make([][]item, chans)
	released := make([]int, chans)
	kept := make([][]network.InFlight, chans)
	for sub := range chans {
		data, want := 0, credit+1+r.IntN(4)
		for data < want {
			it := item{network.KindData, []byte(fmt.Sprintf("ch%d-%d", sub, len(inputs[sub])))}
			if r.IntN(3) == 0 && (len(inputs[sub]) == 0 || inputs[sub][len(inputs[sub])-1].kind == network.KindData) {
				it = item{network.KindWatermark, network.NewWatermark(int64(len(inputs[sub]))).Data}
			}
			if it.kind == network.KindData {
				data++
			}
			if data <= credit {
				released[sub]++
			}
			inputs[sub] = append(inputs[sub], it)
			rp.Subs[sub].Add(it.buffer(rp.Pool))
		}
		kept[sub] = rp.Subs[sub].AddPriority(network.NewBarrier(network.Barrier{ID: 7, Unaligned: true}))
	}
	// The consumer has taken nothing: each channel's queue ends up as its
	// barrier and the buffers released before it.
	for sub, c := range in {
		var queue []*network.Buffer
		var prio int
		for {
			queue, prio = c.QueuedBuffers()
			if prio == 1 && len(queue) == 1+released[sub] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("channel %d: %d queued, %d of them priority events; want the barrier and %d released buffers", sub, len(queue), prio, released[sub])
			}
			time.Sleep(time.Millisecond)
		}
		if queue[0].Kind != network.KindBarrier || queue[0].Overtaken != released[sub] {
			t.Errorf("channel %d: head %s overtook %d, want the barrier overtaking %d", sub, queue[0].Kind, queue[0].Overtaken, released[sub])
		}
		for k, b := range queue[1:] {
			if want := inputs[sub][k]; b.Kind != want.kind || !bytes.Equal(b.Data, want.data) {
				t.Errorf("channel %d: queued %d is %s %q, want %v", sub, k, b.Kind, b.Data, want)
			}
		}
		rest := inputs[sub][released[sub]:]
		if len(kept[sub]) != len(rest) {
			t.Fatalf("channel %d: the producer kept %d buffers as channel state, want the %d of its backlog", sub, len(kept[sub]), len(rest))
		}
		for k, f := range kept[sub] {
			if f.Kind != rest[k].kind || !bytes.Equal(f.Data, rest[k].data) {
				t.Errorf("channel %d: channel state %d is %s %q, want %v", sub, k, f.Kind, f.Data, rest[k])
			}
		}
	}
	// Then every channel delivers its barrier first and its input in order
	// (ended, so that closing the connection fails nothing).
	for sub := range chans {
		inputs[sub] = append(inputs[sub], item{network.KindEndOfPartition, nil})
		rp.Subs[sub].Add(network.NewEndOfPartition())
	}
	got := make([][]item, chans)
	for n := 0; n < chans; n++ {
		c, b := pollOne(t, g, 5*time.Second)
		if b.Kind != network.KindBarrier || len(got[c.Index]) != 0 {
			t.Fatalf("polled %s from channel %d before every barrier", b.Kind, c.Index)
		}
		got[c.Index] = append(got[c.Index], item{b.Kind, nil})
	}
	for left := chans; left > 0; {
		c, b := pollOne(t, g, 5*time.Second)
		got[c.Index] = append(got[c.Index], item{b.Kind, append([]byte(nil), b.Data...)})
		if b.Kind == network.KindData {
			b.Recycle()
			c.ReturnCredit()
		}
		if len(got[c.Index]) == 1+len(inputs[c.Index]) {
			left--
		}
	}
	for sub := range chans {
		for k, want := range inputs[sub] {
			if g := got[sub][1+k]; g.kind != want.kind || !bytes.Equal(g.data, want.data) {
				t.Errorf("channel %d: buffer %d after the barrier is %v, want %v", sub, k, g, want)
			}
		}
	}
}

// attached reports whether n views of s's connections have their
// subpartitions.
func attached(s *Server, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		for _, v := range c.viewsSnapshot() {
			v.mu.Lock()
			if v.sub != nil {
				n--
			}
			v.mu.Unlock()
		}
	}
	return n == 0
}

// priorityAt is a priority barrier the producer added to a channel after
// its first k items, and the channel state AddPriority returned.
type priorityAt struct {
	id   int64
	k    int
	kept []network.InFlight
}

// seen is what a consumer took from a channel: an item, or a priority
// barrier (id > 0) with its Overtaken count.
type seen struct {
	it        item
	id        int64
	overtaken int
}

// producePriority writes the shuffle's inputs as shuffle.produce does,
// adding after random items of each channel priority barriers (ids from
// 1, not after the end of partition), and returns them per channel.
func (sh *shuffle) producePriority(parts []*network.ResultPartition, r *rand.Rand) [][]priorityAt {
	var wg sync.WaitGroup
	out := make([][]priorityAt, sh.producers*sh.subs)
	at := make([][]map[int]int, len(parts)) // [producer][sub]: after k items, this many barriers
	for p := range parts {
		at[p] = make([]map[int]int, sh.subs)
		for s := range sh.subs {
			at[p][s] = map[int]int{}
			n := len(sh.inputs[p][s])
			for range 1 + r.IntN(6) {
				at[p][s][r.IntN(n)]++ // 0..n-1: before the end of partition
			}
		}
	}
	for p, rp := range parts {
		order := make([]int, 0)
		for s := range sh.subs {
			for range sh.inputs[p][s] {
				order = append(order, s)
			}
		}
		r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := make([]int, sh.subs)
			id := int64(0)
			for _, s := range order {
				for range at[p][s][next[s]] {
					id++
					kept := rp.Subs[s].AddPriority(network.NewBarrier(network.Barrier{ID: id, Unaligned: true}))
					out[p*sh.subs+s] = append(out[p*sh.subs+s], priorityAt{id: id, k: next[s], kept: kept})
				}
				it := sh.inputs[p][s][next[s]]
				next[s]++
				rp.Subs[s].Add(it.buffer(rp.Pool))
			}
		}()
	}
	wg.Wait()
	return out
}

// consumePriority polls g as consume does, keeping priority barriers
// (unaligned ones; the inputs' own barriers are aligned) with their
// Overtaken counts.
func consumePriority(t *testing.T, g *network.InputGate, channels int, r *rand.Rand) [][]seen {
	out := make([][]seen, channels)
	for ended := 0; ended < channels; {
		c, b := pollOne(t, g, 10*time.Second)
		s := seen{it: item{b.Kind, append([]byte(nil), b.Data...)}}
		if b.Kind == network.KindBarrier && b.Barrier().Unaligned {
			s = seen{id: b.Barrier().ID, overtaken: b.Overtaken}
		}
		out[c.Index] = append(out[c.Index], s)
		switch b.Kind {
		case network.KindEndOfPartition:
			ended++
		case network.KindData:
			b.Recycle()
			c.ReturnCredit()
		}
		if r.IntN(32) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return out
}

// checkPriority checks one channel's run: without its priority barriers
// the channel delivered exactly its input; each barrier came after the
// consumer had taken j <= k items (k: the items added before it), and the
// channel state items of input[j:k] are exactly the Overtaken ones queued
// at the consumer followed by those the producer kept. So what the
// consumer took, what it copies and what the producer kept together are
// the input up to the barrier, once each: the cut an unaligned checkpoint
// stores.
func checkPriority(input []item, got []seen, sent []priorityAt) error {
	var stream []item
	cut := map[int64]seen{}
	at := map[int64]int{}
	for _, s := range got {
		if s.id > 0 {
			cut[s.id] = s
			at[s.id] = len(stream)
			continue
		}
		stream = append(stream, s.it)
	}
	if len(stream) != len(input) {
		return fmt.Errorf("delivered %d buffers besides priority barriers, want %d", len(stream), len(input))
	}
	for k := range input {
		if stream[k].kind != input[k].kind || !bytes.Equal(stream[k].data, input[k].data) {
			return fmt.Errorf("buffer %d is %v, want %v", k, stream[k], input[k])
		}
	}
	if len(cut) != len(sent) {
		return fmt.Errorf("delivered %d priority barriers, the producer added %d", len(cut), len(sent))
	}
	for _, p := range sent {
		s, ok := cut[p.id]
		if !ok {
			return fmt.Errorf("priority barrier %d never arrived", p.id)
		}
		j := at[p.id]
		if j > p.k {
			return fmt.Errorf("priority barrier %d arrived after %d buffers, but was added after %d", p.id, j, p.k)
		}
		var state []item
		for _, it := range input[j:p.k] {
			if it.kind == network.KindData || it.kind == network.KindWatermark || it.kind == network.KindWatermarkStatus {
				state = append(state, it)
			}
		}
		if s.overtaken+len(p.kept) != len(state) {
			return fmt.Errorf("priority barrier %d (added after %d buffers, taken after %d): overtook %d queued and the producer kept %d, want %d together",
				p.id, p.k, j, s.overtaken, len(p.kept), len(state))
		}
		for i, f := range p.kept {
			if w := state[s.overtaken+i]; f.Kind != w.kind || !bytes.Equal(f.Data, w.data) {
				return fmt.Errorf("priority barrier %d: the producer's channel state %d is %s %x, want %v", p.id, i, f.Kind, f.Data, w)
			}
		}
	}
	return nil
}

// TestPrioritySameAsLocal: random inputs with priority barriers added at
// random moments, over network.Connect (in one process) and over loopback
// TCP and net.Pipe with several channels on one connection, small
// credit and 0-3 floating buffers: every transport delivers each channel's input unchanged around
// its priority barriers, each barrier's Overtaken count and the channel
// state the producer kept add up to exactly the input before it, and no
// priority barrier is ever taken behind data added after it.
func TestPrioritySameAsLocal(t *testing.T) {
	checkGoroutines(t)
	seed := testseed.New(t)
	r := rand.New(rand.NewPCG(seed, 21))
	queued := 0
	for round := range 4 {
		sh := &shuffle{producers: 1 + r.IntN(3), subs: 1 + r.IntN(3), size: 64 << r.IntN(3), pool: 2 + r.IntN(3)}
		credit := 1 + r.IntN(2)
		sh.inputs = make([][][]item, sh.producers)
		for p := range sh.inputs {
			sh.inputs[p] = make([][]item, sh.subs)
			for s := range sh.subs {
				sh.inputs[p][s] = genChannel(r, 100+r.IntN(300), sh.size)
			}
		}
		for _, tr := range []string{"network.Connect", "tcp", "net.Pipe"} {
			sent, got := sh.runPriority(t, tr, seed+uint64(round), credit)
			for p := range sh.producers {
				for s := range sh.subs {
					i := p*sh.subs + s
					if err := checkPriority(sh.inputs[p][s], got[i], sent[i]); err != nil {
						t.Fatalf("round %d (%+v, credit %d): channel %d over %s: %v", round, *sh, credit, i, tr, err)
					}
					for _, g := range got[i] {
						if g.overtaken > 0 {
							queued++
						}
					}
				}
			}
		}
		t.Logf("round %d: %d channels, credit %d: each transport's priority barriers cut each channel's input exactly", round, sh.producers*sh.subs, credit)
	}
	if queued == 0 {
		t.Error("no priority barrier overtook a queued buffer: the test did not exercise the receiver's side")
	}
}

// runPriority runs the edge with priority barriers over transport tr and
// returns the barriers the producers added and what each channel
// delivered.
func (sh *shuffle) runPriority(t *testing.T, tr string, seed uint64, credit int) ([][]priorityAt, [][]seen) {
	parts := sh.partitions()
	g := network.NewInputGate()
	if tr == "network.Connect" {
		for p := range parts {
			for s := range sh.subs {
				network.Connect(parts[p].Subs[s], g, 0, p*sh.subs+s, credit)
			}
		}
	} else {
		pc, cc := identity("producer"), identity("consumer")
		for _, c := range []*Config{&pc, &cc} {
			c.BufferSize, c.BuffersPerChannel, c.MaxWriteBytes, c.ReadBufferSize = sh.size, credit, 4*sh.size, 64
		}
		var s *Server
		var conn *Conn
		if tr == "net.Pipe" {
			pp := newPipes()
			s = serveOn(t, pc, pp)
			var err error
			if conn, err = Dial(context.Background(), cc, pp, Peer{ID: "producer", Addr: "pipe"}); err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
		} else {
			s = startServer(t, pc)
			conn = dial(t, cc, s, "producer")
		}
		// A gate pool of 0-3 floating buffers (0: exclusive credit only).
		var floating *network.BufferPool
		if f := int(seed % 4); f > 0 {
			var err error
			if floating, err = network.NewBudget(1<<30).NewPool(0, f, sh.size); err != nil {
				t.Fatal(err)
			}
			defer floating.Close()
		}
		for p := range parts {
			key := network.PartitionKey{Job: "job", Edge: 1, Producer: p}
			if err := s.Publish(key, parts[p], func(sub int, err error) { t.Errorf("producer %d subpartition %d failed: %v", p, sub, err) }); err != nil {
				t.Fatal(err)
			}
			for sub := range sh.subs {
				if _, err := conn.Request(Request{Key: key, Subpartition: sub, Gate: g, Channel: p*sh.subs + sub, Floating: floating,
					Fail: func(err error) { t.Errorf("channel %d failed: %v", p*sh.subs+sub, err) }}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	done := make(chan [][]priorityAt)
	go func() { done <- sh.producePriority(parts, rand.New(rand.NewPCG(seed, 1))) }()
	got := consumePriority(t, g, sh.producers*sh.subs, rand.New(rand.NewPCG(seed, 2)))
	return <-done, got
}

// TestPromotedBarrierOvertakesBacklog: an aligned barrier waiting for
// credit in the producer's ledger that its aligned-checkpoint timeout
// promotes (Subpartition.PromoteBarrier) crosses the connection as a
// priority event, unaligned now: it overtakes the buffer already released
// (Overtaken 1) and the data ahead of it in the ledger, which the producer
// keeps as channel state and which arrives after it; the data behind it
// stays behind.
func TestPromotedBarrierOvertakesBacklog(t *testing.T) {
	checkGoroutines(t)
	pc, cc := identity("producer"), identity("consumer")
	for _, c := range []*Config{&pc, &cc} {
		c.BufferSize, c.BuffersPerChannel = 256, 1
	}
	s := startServer(t, pc)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(1, network.NewBufferPool(8, 256))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, func(sub int, err error) { t.Errorf("subpartition %d failed: %v", sub, err) }); err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	ch, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Gate: g, Fail: func(err error) { t.Errorf("channel failed: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request", func() bool { return attached(s, 1) })
	add := func(s string) {
		b, err := rp.Pool.Request(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Data = append(b.Data[:0], s...)
		rp.Subs[0].Add(b)
	}
	add("d0") // released: the one credit
	add("d1")
	add("d2")
	rp.Subs[0].Add(network.NewBarrier(network.Barrier{ID: 5}))
	add("d3")
	var kept []network.InFlight
	if !rp.Subs[0].PromoteBarrier(5, func(over []network.InFlight) { kept = over }) {
		t.Fatal("the barrier was not waiting in the ledger")
	}
	if len(kept) != 2 || string(kept[0].Data) != "d1" || string(kept[1].Data) != "d2" {
		t.Fatalf("the producer kept %v as channel state, want d1 and d2", kept)
	}
	waitFor(t, "the barrier and d0", func() bool { q, prio := ch.Input().QueuedBuffers(); return prio == 1 && len(q) == 2 })
	c, b := pollOne(t, g, 5*time.Second)
	if br := b.Barrier(); b.Kind != network.KindBarrier || !br.Unaligned || br.ID != 5 || b.Overtaken != 1 {
		t.Fatalf("first delivered %s %+v overtaking %d, want unaligned barrier 5 overtaking 1", b.Kind, b.Barrier(), b.Overtaken)
	}
	for _, want := range []string{"d0", "d1", "d2", "d3"} {
		c, b = pollOne(t, g, 5*time.Second)
		if b.Kind != network.KindData || string(b.Data) != want {
			t.Fatalf("delivered %s %q, want %s", b.Kind, b.Data, want)
		}
		b.Recycle()
		c.ReturnCredit()
	}
	rp.Subs[0].Add(network.NewEndOfPartition())
	if _, b := pollOne(t, g, 5*time.Second); b.Kind != network.KindEndOfPartition {
		t.Fatalf("delivered %s, want end of partition", b.Kind)
	}
}
