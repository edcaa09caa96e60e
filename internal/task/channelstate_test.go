package task

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/protocol"
)

// An unaligned barrier's channel state keeps the watermarks among the data
// it overtook, in their places, on both sides of the channel: a restored
// window operator starts from the watermark of its snapshot, so a replayed
// record must meet the watermarks that came before it in the run that took
// the checkpoint, or it is on time where it was late (issue: window-agg's
// kill-and-resume test counted a late element, with unaligned checkpoints).
func TestChannelStateKeepsWatermarks(t *testing.T) {
	pool := network.NewBufferPool(8, 64)
	rp := network.NewResultPartition(1, pool)
	g := network.NewInputGate()
	// Two credits: d1 and d2 reach the receiver's queue, d3 waits in the
	// sender's backlog.
	network.Connect(rp.Subs[0], g, 0, 0, 2)
	data := func(s string) {
		b := pool.TryRequest()
		b.Data = append(b.Data, s...)
		rp.Subs[0].Add(b)
	}
	data("d1")
	rp.Subs[0].Add(network.NewWatermark(10))
	data("d2")
	rp.Subs[0].Add(network.NewWatermark(20))
	data("d3")
	rp.Subs[0].Add(network.NewWatermark(30))

	// The sender's side: what the barrier overtook in its backlog.
	over := rp.Subs[0].AddPriority(network.NewBarrier(network.Barrier{ID: 1, Unaligned: true}))
	if got, want := describeInFlight(over), "[d3 wm30]"; got != want {
		t.Errorf("sender's channel state %s, want %s", got, want)
	}

	// The receiver's side: what the barrier overtook in its queue.
	c, b, ok := g.PollPriority()
	if !ok || b.Kind != network.KindBarrier {
		t.Fatalf("no priority barrier: %v %v", ok, b)
	}
	r := &recording{id: 1, channels: map[int]bool{}, copied: map[*network.Buffer]bool{}}
	r.copyQueued(c, b.Overtaken)
	var in []network.InFlight
	for d := r.data; len(d) >= 8; {
		idx, l := binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:])
		_, kind := frameKind(int(idx))
		in = append(in, network.InFlight{Kind: kind, Data: d[8 : 8+l]})
		d = d[8+l:]
	}
	if got, want := describeInFlight(in), "[d1 wm10 d2 wm20]"; got != want {
		t.Errorf("receiver's channel state %s, want %s", got, want)
	}

	// And a frame of a watermark reads back as the watermark event.
	for _, f := range in {
		if f.Kind == network.KindWatermark {
			ev, err := inFlightEvent(f.Kind, f.Data)
			if err != nil || ev.Kind != network.KindWatermark || ev.Watermark() != int64(binary.LittleEndian.Uint64(f.Data)) {
				t.Errorf("frame %v read back as %v, %v", f, ev, err)
			}
		}
	}
}

func describeInFlight(bufs []network.InFlight) string {
	var s []string
	for _, b := range bufs {
		switch b.Kind {
		case network.KindData:
			s = append(s, string(b.Data))
		case network.KindWatermark:
			s = append(s, fmt.Sprintf("wm%d", int64(binary.LittleEndian.Uint64(b.Data))))
		default:
			s = append(s, b.Kind.String())
		}
	}
	return fmt.Sprint(s)
}

// reports is a Reporter that keeps what the task tells the JobManager.
type reports struct {
	mu       sync.Mutex // guards the fields below
	acks     []protocol.AcknowledgeCheckpoint
	declines []protocol.DeclineCheckpoint
}

func (r *reports) Acknowledge(a protocol.AcknowledgeCheckpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
}

func (r *reports) Decline(d protocol.DeclineCheckpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declines = append(r.declines, d)
}

func (r *reports) SendEvent(protocol.OperatorEvent) {}
func (r *reports) SourceEnded(protocol.SourceEnded) {}

func (r *reports) counts() (acks, declines int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acks), len(r.declines)
}

// An unaligned checkpoint's input channel state that passes
// ChannelStateMemory is declined at once, naming the setting, while the
// recording still waits for barriers (a backpressured channel can hold
// them back for long); the recording's end declines nothing more and
// acknowledges nothing.
func TestChannelStateBoundDeclinesAtOnce(t *testing.T) {
	rep := &reports{}
	tk := &Task{name: "Map (1/2)", spec: Spec{Reporter: rep}, cp: newCheckpoint(&Checkpoints{ChannelStateMemory: 100}, 0)}
	tk.asyncCtx, tk.asyncCancel = context.WithCancel(context.Background())
	defer tk.asyncCancel()
	r := tk.newRecording(7)
	r.channels[0], r.channels[1] = true, true
	r.add(0, network.KindData, make([]byte, 40)) // 48 of 100 bytes
	if _, n := rep.counts(); n != 0 {
		t.Fatalf("declined under the bound: %+v", rep.declines)
	}
	r.add(1, network.KindData, make([]byte, 50)) // 106
	if _, n := rep.counts(); n != 1 {
		t.Fatalf("%d declines once the bound was passed, want 1 at once", n)
	}
	d := rep.declines[0]
	if d.ID != 7 || !d.Counts || !strings.Contains(d.Reason, "CheckpointConfig.ChannelStateMemory (--channel-state-memory)") ||
		!strings.Contains(d.Reason, "Map (1/2)") || !strings.Contains(d.Reason, "100 bytes") {
		t.Fatalf("decline %+v: want checkpoint 7, counted, naming the task, the bound and the setting", d)
	}
	if r.complete() {
		t.Fatal("the recording ended with the decline; it should wait for its barriers as before")
	}
	r.add(0, network.KindData, make([]byte, 10))
	if len(r.data) != 0 {
		t.Fatalf("the recording holds %d bytes past its bound", len(r.data))
	}

	r.handlerDone = true // the last barrier came
	if !r.complete() {
		t.Fatal("the recording did not end with its last barrier")
	}
	tk.asyncWG.Add(1)
	tk.upload(&pendingSnapshot{id: 7, unaligned: true, rec: r, input: r.done})
	if acks, declines := rep.counts(); acks != 0 || declines != 1 {
		t.Fatalf("after the recording ended: %d acks, %d declines; want 0 and the one decline", acks, declines)
	}
}
