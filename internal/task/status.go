package task

import (
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/internal/watermark"
)

// applyValve applies what input in's valve decided, in the order that keeps
// downstream right: going active is announced before the watermark that
// follows it, going idle after the last watermark.
//
// A head operator with several inputs (operator.InputStatusReceiver) learns
// of each input's status before the task's outputs change theirs: an input
// going idle may advance its combined watermark, which must go out while the
// outputs are still active.
func (t *Task) applyValve(in int, r watermark.Result) {
	if r.Status && !r.Idle {
		t.inputStatus(in, false)
		t.updateStatus()
	}
	if r.Advanced {
		t.noteInputWatermark()
		t.readers[in].ProcessWatermark(r.Watermark)
	}
	if r.Status && r.Idle {
		t.inputStatus(in, true)
		t.updateStatus()
	}
}

// inputStatus tells a multi-input head operator that input in went idle or
// active.
func (t *Task) inputStatus(in int, idle bool) {
	if len(t.valves) < 2 {
		return // one input: the valve's output is the operator's
	}
	if r, ok := t.ops[0].(operator.InputStatusReceiver); ok {
		t.current = 0
		r.ProcessInputStatus(in, idle)
	}
}

// operatorIdle records that operator i of the chain marked its output idle
// or active (operator.Context.SetIdle).
func (t *Task) operatorIdle(i int, idle bool) {
	if idle == t.opIdle[i] {
		return
	}
	if t.opIdle == nil {
		t.opIdle = map[int]bool{}
	}
	if idle {
		t.opIdle[i] = true
	} else {
		delete(t.opIdle, i)
	}
	t.updateStatus()
}

// updateStatus announces the task's output status when it changed: idle
// when every input that has live channels is idle (a task with network
// inputs), or when an operator of the chain marked itself idle.
func (t *Task) updateStatus() {
	idle := len(t.opIdle) > 0
	if !idle && len(t.valves) > 0 {
		live := 0
		idle = true
		for _, v := range t.valves {
			if v.Live() == 0 {
				continue
			}
			live++
			idle = idle && v.OutputIdle()
		}
		idle = idle && live > 0
	}
	if idle == t.outIdle {
		return
	}
	t.outIdle = idle
	t.Stats.OutputIdle = idle
	for _, w := range t.writers {
		w.WatermarkStatus(idle)
	}
}
