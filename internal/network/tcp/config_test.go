package tcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/network"
)

// TestConfigRefused: a setting out of range is refused naming it.
func TestConfigRefused(t *testing.T) {
	for _, c := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.BufferSize = 32 }, "taskmanager.memory.segment-size"},
		{func(c *Config) { c.BuffersPerChannel = -1 }, "taskmanager.network.memory.buffers-per-channel"},
		{func(c *Config) { c.MaxWriteBytes = 1000 }, "taskmanager.network.tcp.max-write-bytes"},
		{func(c *Config) { c.ReadBufferSize = 10 }, "taskmanager.network.tcp.read-buffer"},
		{func(c *Config) { c.HelloTimeout = -1 }, "negative timeout"},
		{func(c *Config) { c.BuildID = string(make([]byte, 300)) }, "BuildID"},
	} {
		cfg := identity("tm")
		c.change(&cfg)
		_, err := NewServer(cfg, nil)
		mustContain(t, "NewServer", err, c.want)
		_, err = Dial(context.Background(), cfg, nil, Peer{})
		mustContain(t, "Dial", err, c.want)
	}
}

// TestChannelPoolsFromBudget: each remote channel reserves its
// BuffersPerChannel buffers from the network budget, refuses to open when
// they do not fit, and gives them back when its partition ends.
func TestChannelPoolsFromBudget(t *testing.T) {
	checkGoroutines(t)
	const size = 1024
	s := startServer(t, identity("producer"))
	cc := identity("consumer")
	cc.BufferSize, cc.BuffersPerChannel, cc.Budget = size, 2, network.NewBudget(3*size)
	conn := dial(t, cc, s, "producer")
	rp := network.NewResultPartition(2, network.NewBufferPool(2, size))
	if err := s.Publish(network.PartitionKey{Job: "j"}, rp, nil); err != nil {
		t.Fatal(err)
	}
	g := network.NewInputGate()
	if _, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Gate: g}); err != nil {
		t.Fatal(err)
	}
	if used := cc.Budget.Used(); used != 2*size {
		t.Errorf("a channel reserved %d bytes, want %d", used, 2*size)
	}
	_, err := conn.Request(Request{Key: network.PartitionKey{Job: "j"}, Subpartition: 1, Gate: g, Channel: 1})
	var be *network.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("a second channel over the budget: %v, want a *network.BudgetError", err)
	}
	mustContain(t, "the refused channel", err, "subpartition 1", `TaskManager "producer"`)
	rp.Subs[0].Add(network.NewEndOfPartition())
	if _, b := pollOne(t, g, 5*time.Second); b.Kind != network.KindEndOfPartition {
		t.Fatalf("got %s", b.Kind)
	}
	waitFor(t, "the ended channel to release its buffers", func() bool { return cc.Budget.Used() == 0 })

}
