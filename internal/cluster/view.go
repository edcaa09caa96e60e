package cluster

import (
	"errors"
	"fmt"
	"github.com/weirhq/weir/internal/protocol"
	"strconv"
	"time"

	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/rest"
)

// view presents the JobManager's state in the REST API's shapes.
type view struct{ c *Local }

func (v *view) Overview() rest.Overview {
	jm := v.c.JM
	total, free := jm.SlotCounts()
	o := rest.Overview{TaskManagers: jm.NumTaskManagers(), SlotsTotal: total, SlotsAvailable: free}
	for _, id := range jm.JobIDs() {
		info, ok := jm.Job(id)
		if !ok {
			continue
		}
		switch info.Status {
		case protocol.JobFinished:
			o.JobsFinished++
		case protocol.JobCanceled:
			o.JobsCancelled++
		case protocol.JobFailed:
			o.JobsFailed++
		default:
			o.JobsRunning++
		}
	}
	return o
}

// TaskManagers implements rest.TaskManagerLister: the registered
// TaskManagers with their slots and their latest heartbeat (Flink's
// timeSinceLastHeartbeat is that time in ms since the epoch).
func (v *view) TaskManagers() []rest.TaskManager {
	tms := v.c.JM.TaskManagers()
	out := make([]rest.TaskManager, len(tms))
	for i, tm := range tms {
		out[i] = rest.TaskManager{ID: tm.ID, Path: tm.ID, SlotsNumber: tm.Slots, FreeSlots: tm.FreeSlots}
		if !tm.LastHeard.IsZero() {
			out[i].TimeSinceLastHeartbeat = tm.LastHeard.UnixMilli()
		}
	}
	return out
}

func (v *view) Jobs() []rest.JobSummary {
	var out []rest.JobSummary
	for _, id := range v.c.JM.JobIDs() {
		if info, ok := v.c.JM.Job(id); ok {
			out = append(out, rest.JobSummary{ID: id, Status: info.Status})
		}
	}
	return out
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func (v *view) Job(id string) (rest.JobDetails, bool) {
	info, ok := v.c.JM.Job(id)
	if !ok {
		return rest.JobDetails{}, false
	}
	now := time.Now()
	end := info.End
	durEnd := end
	if durEnd.IsZero() {
		durEnd = now
	}
	d := rest.JobDetails{
		ID: info.ID, Name: info.Name, State: info.Status,
		StartTime: millis(info.Start), EndTime: millis(end), Duration: durEnd.Sub(info.Start).Milliseconds(),
		MaxParallelism: info.MaxParallelism, Now: now.UnixMilli(), Timestamps: map[protocol.JobState]int64{},
	}
	for s, t := range info.Times {
		d.Timestamps[s] = t.UnixMilli()
	}
	var all []protocol.TaskState
	for _, vx := range info.Vertices {
		states := vx.Tasks
		all = append(all, states...)
		counts := rest.CountStates(states)
		rv := rest.Vertex{
			ID: vx.ID, Name: vx.Name, MaxParallelism: vx.MaxParallelism, Parallelism: vx.Parallelism,
			Status: rest.AggregateVertexState(counts, vx.Parallelism), StartTime: d.StartTime, EndTime: d.EndTime,
			Duration: d.Duration, Tasks: counts,
			Metrics: rest.VertexMetrics{
				ReadBytes: vx.Stats.BytesIn, ReadBytesComplete: true, WriteBytes: vx.Stats.BytesOut, WriteBytesComplete: true,
				ReadRecords: vx.Stats.RecordsIn, ReadRecordsComplete: true, WriteRecords: vx.Stats.RecordsOut, WriteRecordsComplete: true,
				AccumulatedBackpressuredTime: vx.Stats.BackPressuredNanos / 1e6,
				AccumulatedIdleTime:          vx.Stats.IdleNanos / 1e6,
				AccumulatedBusyTime:          vx.Stats.BusyNanos / 1e6,
			},
		}
		d.Vertices = append(d.Vertices, rv)
		node := rest.PlanNode{ID: vx.ID, Parallelism: vx.Parallelism, Operator: "", OperatorStrategy: "", Description: vx.Name}
		for i, in := range vx.Inputs {
			node.Inputs = append(node.Inputs, rest.PlanInput{Num: i, ID: in.FromVertex, ShipStrategy: in.Partition, Exchange: "pipelined_bounded"})
		}
		d.Plan.Nodes = append(d.Plan.Nodes, node)
	}
	d.StatusCounts = rest.CountStates(all)
	return d, true
}

func (v *view) Exceptions(id string) (rest.JobExceptions, bool) {
	info, ok := v.c.JM.Job(id)
	if !ok {
		return rest.JobExceptions{}, false
	}
	var ex rest.JobExceptions
	if f := info.Failure; f != nil {
		ex.RootException = f.Err.Error()
		ex.Timestamp = f.Time.UnixMilli()
	}
	// Newest first, as Flink lists them; restarts leave one entry each.
	for k := len(info.Exceptions) - 1; k >= 0; k-- {
		f := info.Exceptions[k]
		ex.AllExceptions = append(ex.AllExceptions, rest.TaskException{Exception: f.Err.Error(), Task: f.TaskName, Timestamp: f.Time.UnixMilli(), TaskManagerID: f.TaskManager})
		trace, name := f.Err.Error(), "error"
		if f.TaskName != "" {
			name = "operator failure"
		}
		if f.Stack != "" { // a panic: show where it came from, as Flink shows stack traces
			trace += "\n\n" + f.Stack
			name = "panic"
		}
		ex.ExceptionHistory.Entries = append(ex.ExceptionHistory.Entries, rest.ExceptionEntry{
			ExceptionName: name, Stacktrace: trace, Timestamp: f.Time.UnixMilli(), TaskName: f.TaskName,
		})
	}
	return ex, true
}

func (v *view) Cancel(id string) error {
	err := v.c.JM.Cancel(id)
	if errors.Is(err, jobmanager.ErrJobNotFound) {
		return rest.ErrJobNotFound
	}
	return err
}

// vertex finds a vertex of a job.
func (v *view) vertex(id, vertexID string) (jobmanager.VertexInfo, bool) {
	info, ok := v.c.JM.Job(id)
	if !ok {
		return jobmanager.VertexInfo{}, false
	}
	for _, vx := range info.Vertices {
		if vx.ID == vertexID {
			return vx, true
		}
	}
	return jobmanager.VertexInfo{}, false
}

// VertexDetails implements rest.VertexDetailer: each subtask's state and
// the TaskManager its current execution is placed on.
func (v *view) VertexDetails(id, vertexID string) (rest.VertexDetails, bool) {
	vx, ok := v.vertex(id, vertexID)
	if !ok {
		return rest.VertexDetails{}, false
	}
	d := rest.VertexDetails{ID: vx.ID, Name: vx.Name, Parallelism: vx.Parallelism, MaxParallelism: vx.MaxParallelism,
		Now: time.Now().UnixMilli(), Subtasks: make([]rest.SubtaskDetail, len(vx.Tasks))}
	for i, st := range vx.Tasks {
		d.Subtasks[i] = rest.SubtaskDetail{Subtask: i, Status: st, Attempt: vx.Attempt, TaskManagerID: vx.TaskManagers[i], Endpoint: vx.TaskManagers[i]}
	}
	return d, true
}

// watermarkStatus is the value of currentOutputWatermarkStatus: the names
// of Flink's WatermarkStatus (docs/windows.md, decision 24).
func watermarkStatus(idle bool) string {
	if idle {
		return "IDLE"
	}
	return "ACTIVE"
}

// Watermarks implements rest.WatermarkReporter: each subtask's
// currentInputWatermark and currentOutputWatermark, as Flink's metrics
// name them (math.MinInt64 until the first watermark), and
// currentOutputWatermarkStatus, ACTIVE or IDLE (Weir's; see
// docs/windows.md, decision 24).
func (v *view) Watermarks(id, vertexID string) ([]rest.Metric, bool) {
	vx, ok := v.vertex(id, vertexID)
	if !ok {
		return nil, false
	}
	ms := make([]rest.Metric, 0, 3*len(vx.Watermarks))
	for i, wm := range vx.Watermarks {
		idle := vx.Subtasks[i] != nil && vx.Subtasks[i].OutputIdle
		ms = append(ms,
			rest.Metric{ID: fmt.Sprintf("%d.currentInputWatermark", i), Value: strconv.FormatInt(wm[0], 10)},
			rest.Metric{ID: fmt.Sprintf("%d.currentOutputWatermark", i), Value: strconv.FormatInt(wm[1], 10)},
			rest.Metric{ID: fmt.Sprintf("%d.currentOutputWatermarkStatus", i), Value: watermarkStatus(idle)})
	}
	return ms, true
}

// SubtaskMetrics implements rest.MetricReporter: per subtask, the task's
// counters under Flink's task metric names (times in milliseconds,
// watermarks as Watermarks gives them) and each operator's own counters as
// "<operator name>.<name>" (numLateRecordsDropped), as its TaskManager
// last pushed them to the JobManager (every publish period); a subtask not
// reported yet has none.
func (v *view) SubtaskMetrics(id, vertexID string) ([]map[string]string, bool) {
	vx, ok := v.vertex(id, vertexID)
	if !ok {
		return nil, false
	}
	out := make([]map[string]string, len(vx.Subtasks))
	for i, s := range vx.Subtasks {
		m := map[string]string{}
		out[i] = m
		if s == nil {
			continue
		}
		num := func(name string, n int64) { m[name] = strconv.FormatInt(n, 10) }
		num("numRecordsIn", s.RecordsIn)
		num("numRecordsOut", s.RecordsOut)
		num("numBytesIn", s.BytesIn)
		num("numBytesOut", s.BytesOut)
		num("accumulatedBusyTime", s.BusyNanos/1e6)
		num("accumulatedIdleTime", s.IdleNanos/1e6)
		num("accumulatedBackPressuredTime", s.BackPressuredNanos/1e6)
		num("currentInputWatermark", s.InputWatermark)
		num("currentOutputWatermark", s.OutputWatermark)
		m["currentOutputWatermarkStatus"] = watermarkStatus(s.OutputIdle)
		for _, om := range s.Operators {
			num(om.Operator+"."+om.Name, om.Value)
		}
	}
	return out, true
}
