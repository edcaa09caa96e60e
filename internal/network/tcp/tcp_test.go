package tcp

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/testseed"
)

// item is one buffer of a channel's input: its kind and bytes.
type item struct {
	kind network.Kind
	data []byte
}

func (it item) String() string { return fmt.Sprintf("%s%x", it.kind, it.data) }

// genChannel returns a random channel input of records, watermarks,
// statuses, barriers and checkpoint cancels, ending in end of data and end
// of partition. No two watermarks or statuses are adjacent, so nothing
// coalesces (a consumer that lags would otherwise see a shorter history,
// by timing): every transport must deliver it unchanged.
func genChannel(r *rand.Rand, n, size int) []item {
	var out []item
	progress := false
	for range n {
		var b *network.Buffer
		switch x := r.IntN(20); {
		case x < 12 || progress:
			d := make([]byte, 1+r.IntN(size))
			for i := range d {
				d[i] = byte(r.Uint32())
			}
			out = append(out, item{network.KindData, d})
			progress = false
			continue
		case x < 15:
			b = network.NewWatermark(r.Int64())
		case x < 17:
			b = network.NewWatermarkStatus(r.IntN(2) == 0)
		case x < 19:
			b = network.NewBarrier(network.Barrier{ID: r.Int64N(1000), Timestamp: r.Int64(), Kind: uint8(r.IntN(3)), AlignedTimeout: r.Int64N(10)})
		default:
			b = network.NewCancelCheckpoint(r.Int64N(1000))
		}
		progress = b.Kind == network.KindWatermark || b.Kind == network.KindWatermarkStatus
		out = append(out, item{b.Kind, b.Data})
	}
	out = append(out, item{network.KindEndOfData, nil}, item{network.KindEndOfPartition, nil})
	return out
}

func (it item) buffer(pool *network.BufferPool) *network.Buffer {
	if it.kind != network.KindData {
		return &network.Buffer{Kind: it.kind, Data: append([]byte(nil), it.data...)}
	}
	b, err := pool.Request(nil)
	if err != nil {
		panic(err)
	}
	b.Data = append(b.Data[:0], it.data...)
	return b
}

// shuffle is a job edge for the equivalence test: producers partitions of
// subs subpartitions each, all consumed by one gate.
type shuffle struct {
	producers, subs, size, pool int
	inputs                      [][][]item // [producer][sub]
}

// produce writes every partition's inputs, interleaving its subpartitions,
// from one goroutine per producer, and reports whether any subpartition
// held a backlog (backpressure).
func (sh *shuffle) produce(parts []*network.ResultPartition, r *rand.Rand) (backlogged bool) {
	var wg sync.WaitGroup
	var saw atomic.Bool
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
			for _, s := range order {
				it := sh.inputs[p][s][next[s]]
				next[s]++
				rp.Subs[s].Add(it.buffer(rp.Pool))
				if rp.Subs[s].Backlog() > 0 {
					saw.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return saw.Load()
}

// consume polls g until every channel has ended and returns what each
// channel (by Index) delivered, recycling and returning credit as a task
// does, with a pause now and then so producers meet backpressure.
func consume(t *testing.T, g *network.InputGate, channels int, r *rand.Rand) [][]item {
	out := make([][]item, channels)
	ended := 0
	for n := 0; ended < channels; n++ {
		c, b := pollOne(t, g, 10*time.Second)
		out[c.Index] = append(out[c.Index], item{b.Kind, append([]byte(nil), b.Data...)})
		if b.Kind == network.KindEndOfPartition {
			ended++
		}
		if b.Kind == network.KindData {
			b.Recycle()
			c.ReturnCredit()
		}
		if r.IntN(64) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return out
}

func (sh *shuffle) partitions() []*network.ResultPartition {
	parts := make([]*network.ResultPartition, sh.producers)
	for p := range parts {
		parts[p] = network.NewResultPartition(sh.subs, network.NewBufferPool(sh.pool, sh.size))
	}
	return parts
}

// runLocal runs the edge over network.Connect: the reference.
func (sh *shuffle) runLocal(t *testing.T, seed uint64, credit int) [][]item {
	parts := sh.partitions()
	g := network.NewInputGate()
	for p := range parts {
		for s := range sh.subs {
			network.Connect(parts[p].Subs[s], g, 0, p*sh.subs+s, credit)
		}
	}
	done := make(chan struct{})
	go func() { sh.produce(parts, rand.New(rand.NewPCG(seed, 1))); close(done) }()
	out := consume(t, g, sh.producers*sh.subs, rand.New(rand.NewPCG(seed, 2)))
	<-done
	return out
}

// runRemote runs the edge over one connection, loopback TCP or net.Pipe,
// the consumer requesting half the partitions before their producers
// publish them.
func (sh *shuffle) runRemote(t *testing.T, seed uint64, credit int, pipe bool) (out [][]item, backlogged bool) {
	pc, cc := identity("producer"), identity("consumer")
	for _, c := range []*Config{&pc, &cc} {
		c.BufferSize, c.BuffersPerChannel, c.MaxWriteBytes, c.ReadBufferSize = sh.size, credit, 4*sh.size, 64
	}
	var s *Server
	var conn *Conn
	if pipe {
		p := newPipes()
		s = serveOn(t, pc, p)
		var err error
		if conn, err = Dial(context.Background(), cc, p, Peer{ID: "producer", Addr: "pipe"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
	} else {
		s = startServer(t, pc)
		conn = dial(t, cc, s, "producer")
	}
	parts := sh.partitions()
	g := network.NewInputGate()
	fails := newFailures()
	publish := func(p int) {
		key := network.PartitionKey{Job: "job", Edge: 1, Producer: p, Attempt: 0}
		if err := s.Publish(key, parts[p], func(sub int, err error) { t.Errorf("producer %d subpartition %d failed: %v", p, sub, err) }); err != nil {
			t.Fatal(err)
		}
	}
	for p := range parts {
		if p%2 == 0 {
			publish(p)
		}
	}
	for p := range parts {
		for sub := range sh.subs {
			_, err := conn.Request(Request{Key: network.PartitionKey{Job: "job", Edge: 1, Producer: p}, Subpartition: sub,
				Gate: g, Input: 0, Channel: p*sh.subs + sub, Fail: fails.hook(p*sh.subs + sub)})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range parts {
		if p%2 == 1 {
			publish(p)
		}
	}
	done := make(chan bool)
	go func() { done <- sh.produce(parts, rand.New(rand.NewPCG(seed, 1))) }()
	out = consume(t, g, sh.producers*sh.subs, rand.New(rand.NewPCG(seed, 2)))
	backlogged = <-done
	fails.mu.Lock()
	defer fails.mu.Unlock()
	for i, err := range fails.errs {
		t.Errorf("channel %d failed: %v", i, err)
	}
	return out, backlogged
}

// TestSameAsLocal: over real loopback TCP, and over net.Pipe (the
// simulator's seam), with several channels on one connection and small
// credit, every channel delivers exactly the buffers network.Connect
// delivers in one process, which are the inputs.
func TestSameAsLocal(t *testing.T) {
	checkGoroutines(t)
	seed := testseed.New(t)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 4 {
		sh := &shuffle{producers: 1 + r.IntN(3), subs: 1 + r.IntN(3), size: 64 << r.IntN(4), pool: 2 + r.IntN(3)}
		credit := 1 + r.IntN(2)
		sh.inputs = make([][][]item, sh.producers)
		for p := range sh.inputs {
			sh.inputs[p] = make([][]item, sh.subs)
			for s := range sh.subs {
				sh.inputs[p][s] = genChannel(r, 100+r.IntN(300), sh.size)
			}
		}
		local := sh.runLocal(t, seed+uint64(round), credit)
		remote, backlogged := sh.runRemote(t, seed+uint64(round), credit, false)
		if !backlogged {
			t.Errorf("round %d: no subpartition ever waited for credit: the test did not exercise backpressure", round)
		}
		pipe, _ := sh.runRemote(t, seed+uint64(round), credit, true)
		for p := range sh.producers {
			for s := range sh.subs {
				i := p*sh.subs + s
				want := sh.inputs[p][s]
				for name, got := range map[string][]item{"network.Connect": local[i], "tcp": remote[i], "net.Pipe": pipe[i]} {
					if len(got) != len(want) {
						t.Fatalf("round %d (%+v, credit %d): channel %d over %s delivered %d buffers, want %d", round, *sh, credit, i, name, len(got), len(want))
					}
					for k := range want {
						if got[k].kind != want[k].kind || !bytes.Equal(got[k].data, want[k].data) {
							t.Fatalf("round %d: channel %d over %s: buffer %d is %v, want %v", round, i, name, k, got[k], want[k])
						}
					}
				}
			}
		}
		t.Logf("round %d: %d channels, %d-byte buffers, credit %d, producer pools of %d: same as network.Connect", round, sh.producers*sh.subs, sh.size, credit, sh.pool)
	}
}
