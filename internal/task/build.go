package task

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/weirhq/weir/internal/barrier"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/statebackend"
	"github.com/weirhq/weir/internal/timers"
	"github.com/weirhq/weir/internal/watermark"
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
		HeapMemory: t.spec.HeapMemory,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the keyed state backend: %w", err)
	}
	ts := timers.New(rng)
	if ctx.State.Backend == "" || ctx.State.Backend == statebackend.KindHashMap {
		// The timers take from the hashmap backend's bound; with pebble
		// they are bounded by the process memory alone.
		ts.UseMemory(t.spec.HeapMemory)
	}
	return &operator.KeyedState{Backend: b, Timers: ts, Range: rng}, nil
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
		out, sides, err := t.outputs(i, insts)
		if err != nil {
			return err
		}
		ctx := operator.NewContext(&t.current, i)
		ctx.OperatorName = n.Name
		ctx.SetSideOutputs(sides)
		ctx.OperatorID = t.spec.OperatorIDs[n.ID]
		ctx.TaskName = t.name
		ctx.Subtask = t.spec.Exec.Subtask
		ctx.Parallelism = v.Parallelism
		ctx.MaxParallelism = v.MaxParallelism
		ctx.KeyHash = t.spec.KeyHash
		ctx.Attempt = t.spec.Exec.Attempt
		ctx.Checkpointing = t.spec.Checkpoints != nil && !t.spec.Checkpoints.SavepointsOnly
		if ctx.Checkpointing {
			ctx.CheckpointInterval = t.spec.Checkpoints.Interval
			ctx.Lineage = t.spec.Checkpoints.Lineage
		}
		if t.spec.Restore != nil {
			ctx.RestoredCheckpoint = t.spec.Restore.CheckpointID
		}
		opID := t.spec.OperatorIDs[n.ID]
		ctx.SendEvent = func(p []byte) {
			t.spec.Reporter.SendEvent(protocol.OperatorEvent{Exec: t.spec.Exec, OperatorID: opID, Payload: append([]byte(nil), p...)})
		}
		ctx.SetIdleHook(func(idle bool) { t.operatorIdle(i, idle) })
		ctx.SetMetrics(&t.Stats.Metrics)
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
		t.valves = make([]*watermark.Valve, len(t.spec.ChannelsPerInput))
		for in, n := range t.spec.ChannelsPerInput {
			var st operator.StreamType
			from := ""
			for _, e := range v.Inputs {
				if e.Input == in {
					st = e.FromNode.OutputType(e.Tag).(operator.StreamType)
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
			t.valves[in] = watermark.NewValve(n)
		}
	}
	return nil
}

// outputs wires node i's main output and side outputs (Flink's OutputTag)
// to its chained successors and network writers: what the node's factory
// gets as its output, and its side outputs by tag. A node with side outputs
// forwards its watermarks to them too, as Flink does.
func (t *Task) outputs(i int, insts []operator.Instance) (out any, sides map[string]any, err error) {
	nodes := t.spec.Vertex.Nodes
	n := nodes[i]
	wire := func(tag string) (any, error) {
		st, _ := n.OutputType(tag).(operator.StreamType)
		if st == nil {
			return nil, nil // a sink
		}
		var outs []any
		for j := i + 1; j < len(nodes); j++ {
			if in := nodes[j].Inputs[0]; in.From == n.ID && in.Tag == tag {
				outs = append(outs, insts[j].Inputs[in.Input])
			}
		}
		for _, o := range t.spec.Outputs {
			if o.Edge.FromNode != n || o.Edge.Tag != tag {
				continue
			}
			if err := st.CodecErr(); err != nil {
				return nil, t.opError(i, fmt.Errorf("its output crosses the network to %q and needs a codec: %w", o.Edge.ToNode.Name, err))
			}
			var sel operator.SelectorFactory
			if o.Edge.Selector != nil {
				sel = o.Edge.Selector.(operator.SelectorFactory)
			}
			route := operator.Route{Subtask: t.spec.Exec.Subtask, MaxParallelism: o.Edge.Target.MaxParallelism, KeyHash: t.spec.KeyHash}
			w, pw := st.NewWriter(o.Partition, sel, route, t.cancel, &t.Stats)
			outs = append(outs, w)
			t.writers = append(t.writers, pw)
			o.Partition.Pool.NotifyOn(t.outputReady)
		}
		return st.Fanout(outs), nil
	}
	if out, err = wire(""); err != nil {
		return nil, nil, err
	}
	if len(n.SideTypes) == 0 {
		return out, nil, nil
	}
	sides = make(map[string]any, len(n.SideTypes))
	var wms []operator.WatermarkInput
	for _, tag := range slices.Sorted(maps.Keys(n.SideTypes)) { // writers in a stable order
		side, err := wire(tag)
		if err != nil {
			return nil, nil, err
		}
		sides[tag] = side
		wms = append(wms, side.(operator.WatermarkInput))
	}
	if out != nil {
		out = n.OutType.(operator.StreamType).TeeWatermarks(out, wms)
	}
	return out, sides, nil
}
