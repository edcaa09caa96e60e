package task

import "github.com/weirhq/weir/internal/watermark"

// applyValve applies what input in's valve decided, in the order that keeps
// downstream right: going active is announced before the watermark that
// follows it, going idle after the last watermark.
func (t *Task) applyValve(in int, r watermark.Result) {
	if r.Status && !r.Idle {
		t.updateStatus()
	}
	if r.Advanced {
		t.noteInputWatermark()
		t.readers[in].ProcessWatermark(r.Watermark)
	}
	if r.Status && r.Idle {
		t.updateStatus()
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
