package tcp

import (
	"testing"

	"github.com/weirhq/weir/internal/network"
)

// TestNoAllocationsPerBuffer: once warm, a data buffer's whole way over a
// loopback connection (the producer's Add, the writer's frame and writev,
// the reader's read into the consumer's pool, delivery, the credit back in
// ADD_CREDIT, and the producer's grant) allocates nothing, on any of the
// goroutines involved (AllocsPerRun counts the process's allocations).
func TestNoAllocationsPerBuffer(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations over a real connection")
	}
	checkGoroutines(t)
	const size = 32 << 10
	pc, cc := identity("producer"), identity("consumer")
	s := startServer(t, pc)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(1, network.NewBufferPool(4, size))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, nil); err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	if _, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Gate: g}); err != nil {
		t.Fatal(err)
	}
	sub := rp.Subs[0]
	one := func() {
		b, err := rp.Pool.Request(nil)
		if err != nil {
			panic(err)
		}
		b.Data = b.Data[:size]
		sub.Add(b)
		for {
			c, got, ok := g.Poll()
			if ok {
				got.Recycle()
				c.ReturnCredit()
				return
			}
			<-g.Notify()
		}
	}
	for range 200 {
		one()
	}
	allocs := testing.AllocsPerRun(2000, one)
	t.Logf("%.3f allocations per 32 KiB data buffer over loopback TCP", allocs)
	if allocs > 0.05 {
		t.Errorf("%.3f allocations per data buffer, want none", allocs)
	}
}
