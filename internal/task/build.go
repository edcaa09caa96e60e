package task

import (
	"fmt"
	"path/filepath"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/state"
)

// opState is the state the task owns for one operator of its chain.
type opState struct {
	store *state.OperatorStore
	keyed *operator.KeyedState // nil unless the operator is keyed
}

// initInputs sets up the bookkeeping of a network task's input channels.
func (t *Task) initInputs() {
	chans := t.spec.Gate.Channels()
	t.in.live = len(chans)
	t.in.dataEnded = make([]bool, len(chans))
	t.in.dataLive = append([]int(nil), t.spec.ChannelsPerInput...)
	if t.cp != nil {
		t.in.handler = barrier.New(len(chans), t.cp.cfg.Mode)
	}
}

// newKeyedState creates a keyed operator's backend and timer service for
// this subtask's key-group range.
func (t *Task) newKeyedState(ctx *operator.Context) (*operator.KeyedState, error) {
	rng := keygroup.RangeFor(ctx.Subtask, ctx.Parallelism, ctx.MaxParallelism)
	b, err := statebackend.New(statebackend.Config{
		Kind: ctx.State.Backend, Dir: ctx.State.Dir, MaxParallelism: ctx.MaxParallelism, Range: rng, Clock: ctx.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the keyed state backend: %w", err)
	}
	return &operator.KeyedState{Backend: b, Timers: timers.New(rng), Range: rng}, nil
}

// build creates the chain's operators, tail first, wiring each operator's
// output to its chained successors and its network writers.
func (t *Task) build() error {
	v := t.spec.Vertex
	nodes := v.Nodes
	t.ops = make([]operator.Lifecycle, len(nodes))
	t.contexts = make([]*operator.Context, len(nodes))
	t.states = make([]opState, len(nodes))
	insts := make([]operator.Instance, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		var outs []any
		for j := i + 1; j < len(nodes); j++ {
			m := nodes[j]
			if m.Inputs[0].From == n.ID {
				outs = append(outs, insts[j].Inputs[m.Inputs[0].Input])
			}
		}
		for _, o := range t.spec.Outputs {
			if o.Edge.FromNode != n {
				continue
			}
			st := n.OutType.(operator.StreamType)
			if err := st.CodecErr(); err != nil {
				return t.opError(i, fmt.Errorf("its output crosses the network to %q and needs a codec: %w", o.Edge.ToNode.Name, err))
			}
			var sel operator.SelectorFactory
			if o.Edge.Selector != nil {
				sel = o.Edge.Selector.(operator.SelectorFactory)
			}
			w, pw := st.NewWriter(o.Partition, sel, t.spec.Exec.Subtask, o.Edge.Target.MaxParallelism, t.cancel, &t.Stats)
			outs = append(outs, w)
			t.writers = append(t.writers, pw)
			o.Partition.Pool.NotifyOn(t.outputReady)
		}
		var out any
		if n.OutType != nil {
			out = n.OutType.(operator.StreamType).Fanout(outs)
		}
		ctx := operator.NewContext(&t.current, i)
		ctx.OperatorName = n.Name
		ctx.OperatorID = t.spec.OperatorIDs[n.ID]
		ctx.TaskName = t.name
		ctx.Subtask = t.spec.Exec.Subtask
		ctx.Parallelism = v.Parallelism
		ctx.MaxParallelism = v.MaxParallelism
		ctx.Attempt = t.spec.Exec.Attempt
		ctx.Checkpointing = t.spec.Checkpoints != nil
		opID := t.spec.OperatorIDs[n.ID]
		ctx.SendEvent = func(p []byte) {
			t.spec.Reporter.SendEvent(protocol.OperatorEvent{Exec: t.spec.Exec, OperatorID: opID, Payload: append([]byte(nil), p...)})
		}
		ctx.Mode = t.spec.Mode
		ctx.Clock = t.spec.Clock
		ctx.Cancel = t.cancel
		ctx.Yield = &t.Stats.Yield
		ctx.State = operator.StateConfig{Backend: t.spec.StateBackend}
		if t.spec.StateDir != "" {
			ctx.State.Dir = filepath.Join(t.spec.StateDir, ctx.OperatorID, fmt.Sprintf("subtask-%d-attempt-%d", t.spec.Exec.Subtask, t.spec.Exec.Attempt))
		}
		t.current = i
		inst, err := n.Factory.(operator.Factory).Create(ctx, out)
		if err != nil {
			return t.opError(i, fmt.Errorf("create: %w", err))
		}
		insts[i], t.ops[i], t.contexts[i] = inst, inst.Op, ctx
		t.states[i].store = state.NewOperatorStore()
		ctx.SetOperatorState(t.states[i].store)
		if inst.Keyed {
			ks, err := t.newKeyedState(ctx)
			if err != nil {
				return t.opError(i, err)
			}
			t.states[i].keyed = ks
			ctx.SetKeyed(ks)
		}
		if _, ok := inst.Op.(operator.OutputFlusher); ok {
			t.flushers = append(t.flushers, i)
		}
		if _, ok := inst.Op.(operator.ProcessingTimer); ok {
			t.timed = append(t.timed, i)
		}
		if i == 0 {
			t.source = inst.Source
		}
	}
	if t.spec.Checkpoints != nil {
		t.cp = newCheckpoint(t.spec.Checkpoints, len(nodes))
	}
	if t.source == nil {
		t.initInputs()
		head := insts[0]
		t.readers = make([]operator.RecordReader, len(t.spec.ChannelsPerInput))
		t.valves = make([]*valve, len(t.spec.ChannelsPerInput))
		for in, n := range t.spec.ChannelsPerInput {
			var st operator.StreamType
			from := ""
			for _, e := range v.Inputs {
				if e.Input == in {
					st = e.FromNode.OutType.(operator.StreamType)
					from = e.FromNode.Name
				}
			}
			if st == nil || in >= len(head.Inputs) {
				return t.opError(0, fmt.Errorf("input %d has no producer", in))
			}
			if err := st.CodecErr(); err != nil {
				return t.opError(0, fmt.Errorf("input %d, from %q, crosses the network and needs a codec: %w", in, from, err))
			}
			name := fmt.Sprintf("task %q input %d", t.name, in)
			t.readers[in] = st.NewReader(head.Inputs[in], n, &t.Stats, name)
			t.valves[in] = newValve(n)
		}
	}
	return nil
}
