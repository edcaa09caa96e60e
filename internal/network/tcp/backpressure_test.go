package tcp

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
)

// TestBackpressureKeepsTheConnection (decision 23): a consumer that reads
// nothing for several TCP_USER_TIMEOUTs while its producer holds a backlog
// far larger than the sockets' buffers keeps its connection: the producer
// sends only with credit and the receiver always reads its socket, so the
// window never stays closed and the kernel never aborts the connection.
// Backpressure lives in credit, not in TCP; keepalive probes (sent
// meanwhile, every half timeout) are answered. Then every buffer arrives,
// in order.
func TestBackpressureKeepsTheConnection(t *testing.T) {
	checkGoroutines(t)
	const size, n, userTimeout = 32 << 10, 1024, 200 * time.Millisecond
	pc, cc := identity("producer"), identity("consumer")
	for _, c := range []*Config{&pc, &cc} {
		c.BufferSize, c.UserTimeout = size, userTimeout
		c.KeepAlive = net.KeepAliveConfig{Enable: true, Idle: userTimeout / 2, Interval: userTimeout / 2, Count: 2}
	}
	s := startServer(t, pc)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(1, network.NewBufferPool(n, size))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, func(sub int, err error) { t.Errorf("the producer's subpartition failed: %v", err) }); err != nil {
		t.Fatal(err)
	}
	for k := range n { // 32 MiB of backlog
		b, err := rp.Pool.Request(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Data = binary.LittleEndian.AppendUint64(b.Data[:0], uint64(k))
		b.Data = b.Data[:size]
		rp.Subs[0].Add(b)
	}
	rp.Subs[0].Add(network.NewEndOfPartition())
	g := network.NewInputGate()
	if _, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Gate: g,
		Fail: func(err error) { t.Errorf("the channel failed while backpressured: %v", err) }}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * userTimeout) // the consumer reads nothing
	for k := range n {
		c, b := pollOne(t, g, 5*time.Second)
		if got := binary.LittleEndian.Uint64(b.Data); got != uint64(k) || len(b.Data) != size {
			t.Fatalf("buffer %d: got number %d, %d bytes", k, got, len(b.Data))
		}
		b.Recycle()
		c.ReturnCredit()
	}
	if _, b := pollOne(t, g, 5*time.Second); b.Kind != network.KindEndOfPartition {
		t.Fatalf("delivered %s, want the end of the partition", b.Kind)
	}
}
