package tcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/network/wire"
)

// fakeProducer is a producer TaskManager played by hand: it answers one
// connection's HELLO, reads n PARTITION_REQUESTs and hands the raw
// connection to the test, which crafts what follows.
func fakeProducer(t *testing.T, n int) (addr string, conn <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan net.Conn, 1)
	go func() {
		defer ln.Close()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		dec, _ := wire.NewDecoder(bufio.NewReader(nc), 64)
		hello, _ := wire.AppendHello(nil, identity("producer").hello())
		if _, err := dec.ReadHello(); err != nil {
			nc.Close()
			return
		}
		nc.Write(hello)
		for range n {
			if typ, err := dec.Next(); err != nil || typ != wire.TypePartitionRequest {
				nc.Close()
				return
			}
		}
		out <- nc
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), out
}

// requestAll requests n channels on c into one gate.
func requestAll(t *testing.T, c *Conn, n int, f *failures) *network.InputGate {
	t.Helper()
	g := network.NewInputGate()
	for i := range n {
		if _, err := c.Request(Request{Key: network.PartitionKey{Job: "j", Producer: i}, Gate: g, Channel: i, Fail: f.hook(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func frame(t *testing.T, h wire.BufferHeader, payload []byte) []byte {
	t.Helper()
	b, err := wire.AppendBuffer(nil, h, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConnectionErrorsFailEveryChannel: a sequence gap, a repeat, data
// beyond credit, a priority event ahead of buffers sent before it, a frame of an unknown channel, the
// peer's close and its reset each fail every channel of the connection at
// once, naming the peer TaskManager and its address.
func TestConnectionErrorsFailEveryChannel(t *testing.T) {
	checkGoroutines(t)
	wm := network.NewWatermark(7).Data
	data := []byte("records")
	cases := []struct {
		name  string
		crash func(t *testing.T, nc net.Conn)
		want  []string
	}{
		{"sequence gap", func(t *testing.T, nc net.Conn) {
			nc.Write(frame(t, wire.BufferHeader{Channel: 1, Sequence: 0, Kind: uint8(network.KindWatermark)}, wm))
			nc.Write(frame(t, wire.BufferHeader{Channel: 1, Sequence: 2, Kind: uint8(network.KindWatermark)}, wm))
		}, []string{"protocol error", "channel 1", "sequence 2, expected 1"}},
		{"repeat", func(t *testing.T, nc net.Conn) {
			nc.Write(frame(t, wire.BufferHeader{Channel: 0, Sequence: 0, Kind: uint8(network.KindWatermark)}, wm))
			nc.Write(frame(t, wire.BufferHeader{Channel: 0, Sequence: 0, Kind: uint8(network.KindWatermark)}, wm))
		}, []string{"protocol error", "sequence 0, expected 1", "repeat"}},
		{"no credit", func(t *testing.T, nc net.Conn) {
			for seq := range uint32(3) { // credit is 2
				nc.Write(frame(t, wire.BufferHeader{Channel: 2, Sequence: seq, Kind: wire.KindData}, data))
			}
		}, []string{"protocol error", "without credit", "channel 2"}},
		{"priority event overtaking", func(t *testing.T, nc net.Conn) {
			nc.Write(frame(t, wire.BufferHeader{Channel: 0, Sequence: 0, Kind: uint8(network.KindWatermark)}, wm))
			nc.Write(frame(t, wire.BufferHeader{Channel: 0, Sequence: 3, Kind: uint8(network.KindBarrier), Priority: true}, network.NewBarrier(network.Barrier{ID: 1, Unaligned: true}).Data))
		}, []string{"protocol error", "priority event", "channel 0 with sequence 3 overtook 2 buffers", "expected sequence 1"}},
		{"unknown channel", func(t *testing.T, nc net.Conn) {
			nc.Write(frame(t, wire.BufferHeader{Channel: 9, Kind: uint8(network.KindWatermark)}, wm))
		}, []string{"channel 9, which was never requested"}},
		{"closed", func(t *testing.T, nc net.Conn) { nc.Close() }, []string{"closed by the peer", "EOF"}},
		{"reset", func(t *testing.T, nc net.Conn) {
			nc.(*net.TCPConn).SetLinger(0)
			nc.Close()
		}, []string{"reset by the peer"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, raw := fakeProducer(t, 3)
			cfg := identity("consumer")
			cfg.BufferSize = 64
			conn, err := Dial(context.Background(), cfg, NewDialer(cfg), Peer{ID: "producer", Addr: addr})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			f := newFailures()
			g := requestAll(t, conn, 3, f)
			nc := <-raw
			defer nc.Close()
			c.crash(t, nc)
			errs := f.wait(t, 3)
			for i, err := range errs {
				mustContain(t, fmt.Sprintf("channel %d", i), err, append([]string{`TaskManager "producer"`, addr}, c.want...)...)
			}
			if errs[0] != errs[1] || errs[1] != errs[2] {
				t.Errorf("the channels failed with different errors: %v", errs)
			}
			<-conn.Done()
			if !errors.Is(conn.Err(), errs[0]) && conn.Err().Error() != errs[0].Error() {
				t.Errorf("Err() = %v, the channels failed with %v", conn.Err(), errs[0])
			}
			// Nothing was delivered after the failure but the frames before it.
			for {
				_, b, ok := g.Poll()
				if !ok {
					break
				}
				if c.name != "sequence gap" && c.name != "repeat" && c.name != "no credit" && c.name != "priority event overtaking" {
					t.Errorf("delivered %s", b.Kind)
				}
			}
		})
	}
}

// TestConsumerGoneFailsProducer: when the consumer's connection ends,
// every subpartition it had attached reports to its producer, naming the
// consumer; a cancelled channel does not.
func TestConsumerGoneFailsProducer(t *testing.T) {
	checkGoroutines(t)
	s := startServer(t, identity("producer"))
	conn := dial(t, identity("consumer"), s, "producer")
	rp := network.NewResultPartition(3, network.NewBufferPool(4, 1024))
	var mu sync.Mutex
	failed := map[int]error{}
	got := make(chan struct{}, 3)
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, func(sub int, err error) {
		mu.Lock()
		failed[sub] = err
		mu.Unlock()
		got <- struct{}{}
	}); err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	var chans []*Channel
	for sub := range 3 {
		ch, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Subpartition: sub, Gate: g, Channel: sub})
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	// A watermark through each proves all three are attached.
	for sub := range 3 {
		rp.Subs[sub].Add(network.NewWatermark(int64(sub)))
	}
	for range 3 {
		pollOne(t, g, 5*time.Second)
	}
	chans[2].Cancel()
	waitFor(t, "the producer to drop the cancelled channel", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.conns {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.views) == 3 && c.views[2] == nil // dropped
		}
		return false
	})
	// Dropped, it no longer holds its producer back: a full backlog goes.
	for range 6 {
		b := rp.Pool.TryRequest()
		if b == nil {
			t.Fatal("the producer's pool ran dry: its buffers wait for a cancelled consumer")
		}
		rp.Subs[2].Add(b)
	}
	if n := rp.Subs[2].Backlog(); n != 0 {
		t.Errorf("the cancelled subpartition holds a backlog of %d", n)
	}
	conn.Close()
	for range 2 {
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatalf("the producer learned of %d failures, want 2", len(failed))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for sub := range 2 {
		mustContain(t, fmt.Sprintf("subpartition %d", sub), failed[sub], `TaskManager "consumer"`, "closed by the peer")
	}
	if err, ok := failed[2]; ok {
		t.Errorf("the cancelled subpartition failed too: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRequestBeforePartition: a request that reaches the producer before
// its partition is published is served once it is; one whose partition
// never comes fails alone after PartitionRequestTimeout, naming the
// setting, while the other channel of the connection goes on.
func TestRequestBeforePartition(t *testing.T) {
	checkGoroutines(t)
	pc := identity("producer")
	pc.PartitionRequestTimeout = 200 * time.Millisecond
	s := startServer(t, pc)
	conn := dial(t, identity("consumer"), s, "producer")
	f := newFailures()
	g := network.NewInputGate()
	late, never := network.PartitionKey{Job: "j", Producer: 1}, network.PartitionKey{Job: "j", Producer: 2}
	for i, key := range []network.PartitionKey{late, never} {
		if _, err := conn.Request(Request{Key: key, Gate: g, Channel: i, Fail: f.hook(i)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both requests to wait at the producer", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.parts) == 2 && len(s.parts[late].waiting) == 1
	})
	rp := network.NewResultPartition(1, network.NewBufferPool(2, 256))
	if err := s.Publish(late, rp, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := rp.Pool.Request(nil)
	b.Data = append(b.Data, "late but served"...)
	rp.Subs[0].Add(b)
	rp.Subs[0].Add(network.NewEndOfPartition())
	c, got := pollOne(t, g, 5*time.Second)
	if c.Channel != 0 || string(got.Data) != "late but served" {
		t.Fatalf("got %q on channel %d", got.Data, c.Channel)
	}
	got.Recycle()
	c.ReturnCredit()
	if _, got = pollOne(t, g, 5*time.Second); got.Kind != network.KindEndOfPartition {
		t.Fatalf("got %s, want end of partition", got.Kind)
	}
	errs := f.wait(t, 1)
	mustContain(t, "the request never served", errs[1], "was not produced", `"producer"`, "taskmanager.network.partition-request-timeout", "channel 1")
	if err, ok := errs[0]; ok {
		t.Errorf("the served channel failed: %v", err)
	}
	select {
	case <-conn.Done():
		t.Fatalf("the connection ended: %v", conn.Err())
	default:
	}
	s.mu.Lock()
	_, kept := s.parts[never]
	s.mu.Unlock()
	if kept {
		t.Error("the expired request's partition entry is still in the server's table")
	}
}

// lockedBuffer is a log destination for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHelloMismatch: a consumer of another build or epoch, or a producer
// other than the TaskManager dialed, is refused on both sides naming both
// values, before any request.
func TestHelloMismatch(t *testing.T) {
	checkGoroutines(t)
	cases := []struct {
		name   string
		change func(c *Config, p *Peer)
		want   []string
		server bool // the server refuses too (it checks build and epoch)
	}{
		{"build", func(c *Config, _ *Peer) { c.BuildID = "build-2" }, []string{`build "build-1"`, `build "build-2"`}, true},
		{"epoch", func(c *Config, _ *Peer) { c.Epoch = 2 }, []string{"epoch 1", "epoch 2"}, true},
		{"TaskManager", func(_ *Config, p *Peer) { p.ID = "someone-else" }, []string{`"producer"`, `"someone-else"`}, false},
		{"session", func(_ *Config, p *Peer) { p.Session = "session-old" }, []string{`"session-producer"`, `"session-old"`}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log lockedBuffer
			pc := identity("producer")
			pc.Logger = slog.New(slog.NewTextHandler(&log, nil))
			s := startServer(t, pc)
			cc, peer := identity("consumer"), Peer{ID: "producer", Addr: s.Addr().String()}
			c.change(&cc, &peer)
			conn, err := Dial(context.Background(), cc, NewDialer(cc), peer)
			if err == nil {
				conn.Close()
			}
			mustContain(t, "Dial", err, append([]string{"refused", s.Addr().String()}, c.want...)...)
			if c.server {
				waitFor(t, "the server to log its refusal", func() bool { return strings.Contains(log.String(), "refused") })
				for _, w := range c.want {
					if !strings.Contains(log.String(), strings.ReplaceAll(w, `"`, `\"`)) {
						t.Errorf("the server's log %q does not name %s", log.String(), w)
					}
				}
			}
		})
	}
}

// TestCloseDuringHello: Close does not wait for a peer that connected and
// said nothing (HelloTimeout is 10 s by default).
func TestCloseDuringHello(t *testing.T) {
	checkGoroutines(t)
	ln, err := Listen(context.Background(), "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(identity("producer"), ln)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitFor(t, "the server to accept", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.hellos) == 1
	})
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with a connection silent in its HELLO", d)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestCancelledChannelSkipsFramesInFlight: frames that reach a channel
// after its Cancel are dropped, not protocol errors, and the connection's
// other channels go on.
func TestCancelledChannelSkipsFramesInFlight(t *testing.T) {
	checkGoroutines(t)
	addr, raw := fakeProducer(t, 2)
	cfg := identity("consumer")
	cfg.BufferSize = 64
	conn, err := Dial(context.Background(), cfg, NewDialer(cfg), Peer{ID: "producer", Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := newFailures()
	g := network.NewInputGate()
	var chans []*Channel
	for i := range 2 {
		ch, err := conn.Request(Request{Key: network.PartitionKey{Job: "j", Producer: i}, Gate: g, Channel: i, Fail: f.hook(i)})
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	nc := <-raw
	defer nc.Close()
	chans[0].Cancel()
	for seq := range uint32(3) { // beyond its credit, too: it is not counted
		nc.Write(frame(t, wire.BufferHeader{Channel: 0, Sequence: seq, Kind: wire.KindData}, []byte("late")))
	}
	nc.Write(frame(t, wire.BufferHeader{Channel: 1, Sequence: 0, Kind: wire.KindData}, []byte("on time")))
	c, b := pollOne(t, g, 5*time.Second)
	if c.Channel != 1 || string(b.Data) != "on time" {
		t.Fatalf("channel %d delivered %q", c.Channel, b.Data)
	}
	if err := conn.Err(); err != nil {
		t.Fatalf("the connection failed: %v", err)
	}
	if _, _, ok := g.Poll(); ok {
		t.Error("the cancelled channel delivered a frame")
	}
}
