package coordinator

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/goldentrace"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// TestTraces runs the coordinator through the golden traces in testdata, in
// the style of etcd-raft's interaction tests.
//
// The file format is goldentrace's. A trace starts with settings and start;
// times are epoch ms.
//
//	settings interval=1000 timeout=5000 min-pause=0 max-concurrent=1
//	         tolerable=0 retained=1 history=10 mode=at-least-once
//	         unaligned aligned-timeout=0
//	                                 settings for the next start (unset keys
//	                                 take the defaults); prints them, or why
//	                                 they are invalid
//	start now=0 tasks=3 sources=0,1 next=1
//	tick T
//	ack T id=N task=I[,J...]         one Ack per task, outputs concatenated
//	decline T id=N task=I reason="..." [counts]
//	finalized T id=N [err="..."]
//	trigger T kind=final|savepoint
//	suspend T
//	resume T [tasks=N] [sources=I,J]  (default: the previous task set)
//	stats | history [n=N] | pending   queries
//
// Every event prints the Output fields that are set, one line each and in
// the Output's order, then the coordinator's state. After every command the
// test checks the package's invariants. Run with -rewrite to regenerate the
// expected output.
func TestTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/*.txt", 12, runTrace)
}

// traceArgs is a command's parsed arguments: the leading time, key=value
// pairs (values may be double-quoted) and bare flags.
type traceArgs struct {
	t      *testing.T
	where  string
	time   int64
	kv     map[string]string
	flags  map[string]bool
	hasNow bool
}

func parseArgs(t *testing.T, where string, fields []string, timed bool) *traceArgs {
	t.Helper()
	a := &traceArgs{t: t, where: where, kv: map[string]string{}, flags: map[string]bool{}}
	if timed {
		if len(fields) == 0 {
			t.Fatalf("%s: missing time", where)
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: bad time %q", where, fields[0])
		}
		a.time, a.hasNow, fields = v, true, fields[1:]
	}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else {
			a.flags[f] = true
		}
	}
	return a
}

func (a *traceArgs) int(key string, def int64) int64 {
	v, ok := a.kv[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.t.Fatalf("%s: bad %s=%q", a.where, key, v)
	}
	return n
}

func (a *traceArgs) need(key string) int64 {
	if _, ok := a.kv[key]; !ok {
		a.t.Fatalf("%s: missing %s=", a.where, key)
	}
	return a.int(key, 0)
}

func (a *traceArgs) tasks(key string) []TaskID {
	v, ok := a.kv[key]
	if !ok {
		return nil
	}
	var out []TaskID
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			a.t.Fatalf("%s: bad %s=%q", a.where, key, v)
		}
		out = append(out, TaskID(n))
	}
	return out
}

func runTrace(t *testing.T, path string) {
	blocks := goldentrace.Parse(t, path)
	rec := goldentrace.NewRecorder(path, *rewrite)
	var (
		s       Settings
		c       *Coordinator
		tasks   int
		sources []TaskID
	)
	for _, blk := range blocks {
		where := fmt.Sprintf("%s:%d", path, blk.Line)
		fields, err := goldentrace.Fields(blk.Cmd)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		cmd := fields[0]
		if c == nil && cmd != "settings" && cmd != "start" {
			t.Fatalf("%s: %s before start", where, cmd)
		}
		var (
			got     []string
			wake    int64
			evented bool
		)
		// event prints an Output; of several (ack task=0,1) only the last
		// WakeAt, after the switch.
		event := func(o Output) {
			got = append(got, formatOutput(o)...)
			wake, evented = o.WakeAt, true
		}
		switch cmd {
		case "settings":
			a := parseArgs(t, where, fields[1:], false)
			s = parseSettings(a)
			if err := s.WithDefaults().Validate(); err != nil {
				got = append(got, strings.Split("invalid: "+err.Error(), "\n")...)
			} else {
				got = append(got, formatSettings(s.WithDefaults()))
			}
		case "start":
			a := parseArgs(t, where, fields[1:], false)
			tasks, sources = int(a.need("tasks")), a.tasks("sources")
			c = New(s, tasks, sources, a.int("next", 1), a.need("now"))
		case "tick":
			a := parseArgs(t, where, fields[1:], true)
			event(c.Tick(a.time))
		case "ack":
			a := parseArgs(t, where, fields[1:], true)
			id := a.need("id")
			for _, task := range a.tasks("task") {
				event(c.Ack(a.time, id, task))
			}
		case "decline":
			a := parseArgs(t, where, fields[1:], true)
			event(c.Decline(a.time, a.need("id"), TaskID(a.need("task")), a.kv["reason"], a.flags["counts"]))
		case "finalized":
			a := parseArgs(t, where, fields[1:], true)
			var err error
			if e, ok := a.kv["err"]; ok {
				err = errors.New(e)
			}
			event(c.Finalized(a.time, a.need("id"), err))
		case "trigger":
			a := parseArgs(t, where, fields[1:], true)
			kind := map[string]Kind{"final": Final, "savepoint": Savepoint}
			k, ok := kind[a.kv["kind"]]
			if !ok {
				t.Fatalf("%s: kind=final or kind=savepoint", where)
			}
			event(c.TriggerNow(a.time, k))
		case "suspend":
			a := parseArgs(t, where, fields[1:], true)
			event(c.Suspend(a.time))
		case "resume":
			a := parseArgs(t, where, fields[1:], true)
			if _, ok := a.kv["tasks"]; ok {
				tasks = int(a.need("tasks"))
			}
			if _, ok := a.kv["sources"]; ok {
				sources = a.tasks("sources")
			}
			event(c.Resume(a.time, tasks, sources))
		case "stats":
			n := c.Stats()
			got = append(got, fmt.Sprintf("triggered=%d in-progress=%d completed=%d failed=%d restored=%d last-restored=%d queued=%d consecutive-failures=%d",
				n.Triggered, n.InProgress, n.Completed, n.Failed, n.Restored, n.LastRestored, n.Queued, n.ConsecutiveFailures))
			got = append(got, fmt.Sprintf("latest-completed=%d retained=%v", c.LatestCompleted(), c.Retained()))
		case "history":
			a := parseArgs(t, where, fields[1:], false)
			for _, h := range c.History(int(a.int("n", 100))) {
				got = append(got, formatHistory(h))
			}
		case "pending":
			for _, p := range c.Pending() {
				got = append(got, fmt.Sprintf("%d %s triggered=%d acked=%d/%d ack-times=%v finalizing=%t",
					p.ID, p.Kind, p.TriggerTime, p.Acked, p.Tasks, p.AckTime, p.Finalizing))
			}
		default:
			t.Fatalf("%s: unknown command %q", where, cmd)
		}
		if evented && wake != 0 {
			got = append(got, fmt.Sprintf("wake at %d", wake))
		}
		if c != nil && cmd != "settings" {
			got = append(got, formatState(c))
			if err := c.checkInvariants(); err != nil {
				t.Errorf("%s: %s: invariant broken: %v", where, blk.Cmd, err)
			}
		}
		rec.Check(t, blk, got)
	}
	rec.Finish(t)
}

func parseSettings(a *traceArgs) Settings {
	s := Settings{
		Interval:          a.int("interval", 0),
		Timeout:           a.int("timeout", 0),
		MinPause:          a.int("min-pause", 0),
		MaxConcurrent:     int(a.int("max-concurrent", 0)),
		TolerableFailures: int(a.int("tolerable", 0)),
		Retained:          int(a.int("retained", 0)),
		AlignedTimeout:    a.int("aligned-timeout", 0),
		HistorySize:       int(a.int("history", 0)),
		Unaligned:         a.flags["unaligned"],
	}
	switch a.kv["mode"] {
	case "", "exactly-once":
	case "at-least-once":
		s.Mode = AtLeastOnce
	default:
		s.Mode = Mode(a.int("mode", 0))
	}
	return s
}

func formatSettings(s Settings) string {
	line := fmt.Sprintf("interval=%d timeout=%d min-pause=%d max-concurrent=%d tolerable=%d retained=%d history=%d mode=%s",
		s.Interval, s.Timeout, s.MinPause, s.MaxConcurrent, s.TolerableFailures, s.Retained, s.HistorySize, s.Mode)
	if s.Unaligned {
		line += fmt.Sprintf(" unaligned aligned-timeout=%d", s.AlignedTimeout)
	}
	return line
}

// formatOutput prints the fields of o that are set, in the Output's order,
// but WakeAt, which the caller prints.
func formatOutput(o Output) []string {
	var lines []string
	for _, id := range o.Completed {
		lines = append(lines, fmt.Sprintf("completed %d", id))
	}
	for _, id := range o.Savepoints {
		lines = append(lines, fmt.Sprintf("savepoint done %d", id))
	}
	for _, a := range o.Aborted {
		notify := "notify tasks"
		if !a.NotifyTasks {
			notify = "tasks not told"
		}
		lines = append(lines, fmt.Sprintf("aborted %d %s (%s): %s", a.ID, a.Kind, notify, a.Reason))
	}
	for _, id := range o.Discard {
		lines = append(lines, fmt.Sprintf("discard %d", id))
	}
	for _, r := range o.Rejected {
		lines = append(lines, fmt.Sprintf("rejected %s: %s", r.Kind, r.Reason))
	}
	for _, id := range o.Finalize {
		lines = append(lines, fmt.Sprintf("finalize %d", id))
	}
	for _, tr := range o.Trigger {
		line := fmt.Sprintf("trigger %d %s ts=%d sources=%v", tr.ID, tr.Kind, tr.Timestamp, tr.Sources)
		if tr.Unaligned {
			line += fmt.Sprintf(" unaligned aligned-timeout=%d", tr.AlignedTimeout)
		}
		if tr.AtLeastOnce {
			line += " at-least-once"
		}
		lines = append(lines, line)
	}
	if o.FailJob != "" {
		lines = append(lines, "fail job: "+o.FailJob)
	}
	for _, n := range o.Notes {
		lines = append(lines, "note: "+n)
	}
	return lines
}

// formatState prints the pending set and the rest of the coordinator's
// state on one line.
func formatState(c *Coordinator) string {
	var b strings.Builder
	b.WriteString("state: pending=[")
	for i, p := range c.Pending() {
		if i > 0 {
			b.WriteString(" ")
		}
		if p.Finalizing {
			fmt.Fprintf(&b, "%d:finalizing", p.ID)
		} else {
			fmt.Fprintf(&b, "%d:%d/%d", p.ID, p.Acked, p.Tasks)
		}
	}
	b.WriteString("]")
	if len(c.queue) > 0 {
		fmt.Fprintf(&b, " queued=%v", c.queue)
	}
	fmt.Fprintf(&b, " retained=%v failures=%d next=%d", c.retained, c.consecutive, c.nextID)
	if c.suspended {
		b.WriteString(" suspended")
	}
	return b.String()
}

func formatHistory(h HistoryEntry) string {
	line := fmt.Sprintf("%d %s %s triggered=%d latest-ack=%d end=%d acked=%d/%d",
		h.ID, h.Kind, h.Status, h.TriggerTime, h.LatestAck, h.EndTime, h.Acked, h.Tasks)
	if h.Discarded {
		line += " discarded"
	}
	if h.FailureReason != "" {
		line += ": " + h.FailureReason
	}
	return line
}

// checkInvariants checks what the Coordinator's field comments promise.
func (c *Coordinator) checkInvariants() error {
	inFlight := 0
	for i, p := range c.pending {
		if i > 0 && c.pending[i-1].id >= p.id {
			return fmt.Errorf("pending ids not increasing: %d then %d", c.pending[i-1].id, p.id)
		}
		if p.id >= c.nextID {
			return fmt.Errorf("pending id %d >= next id %d", p.id, c.nextID)
		}
		acked := 0
		for _, a := range p.ackTime {
			if a >= 0 {
				acked++
			}
		}
		if acked != p.acked || p.finalizing != (acked == len(p.ackTime)) {
			return fmt.Errorf("checkpoint %d: acked %d, counted %d, %d tasks, finalizing %t", p.id, acked, p.acked, len(p.ackTime), p.finalizing)
		}
		if !p.finalizing {
			inFlight++
		}
		if p.trigger+c.s.Timeout <= c.now {
			return fmt.Errorf("checkpoint %d past its deadline %d at %d", p.id, p.trigger+c.s.Timeout, c.now)
		}
	}
	if inFlight > c.s.MaxConcurrent {
		return fmt.Errorf("%d in flight, max %d", inFlight, c.s.MaxConcurrent)
	}
	if len(c.queue) > MaxQueuedRequests || (len(c.queue) > 0 && inFlight < c.s.MaxConcurrent) {
		return fmt.Errorf("queue of %d with %d in flight", len(c.queue), inFlight)
	}
	if c.suspended && (len(c.pending) > 0 || len(c.queue) > 0) {
		return fmt.Errorf("suspended with %d pending and %d queued", len(c.pending), len(c.queue))
	}
	if len(c.retained) > c.s.Retained {
		return fmt.Errorf("%d retained, max %d", len(c.retained), c.s.Retained)
	}
	for i := 1; i < len(c.retained); i++ {
		if c.retained[i-1] >= c.retained[i] {
			return fmt.Errorf("retained not increasing: %v", c.retained)
		}
	}
	if c.consecutive > c.s.TolerableFailures {
		return fmt.Errorf("%d consecutive failures, tolerable %d", c.consecutive, c.s.TolerableFailures)
	}
	if len(c.history) > c.s.HistorySize {
		return fmt.Errorf("history of %d, max %d", len(c.history), c.s.HistorySize)
	}
	return nil
}
