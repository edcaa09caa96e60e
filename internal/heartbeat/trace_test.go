package heartbeat

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/goldentrace"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*/*.txt")

// traceCmd is one parsed command: name, time (for timed commands), then
// positional words, key=value pairs (values may be double-quoted) and bare
// flags.
type traceCmd struct {
	t     *testing.T
	where string
	name  string
	now   int64
	words []string
	kv    map[string]string
}

func parseCmd(t *testing.T, where, line string) *traceCmd {
	t.Helper()
	f, err := goldentrace.Fields(line)
	if err != nil || len(f) == 0 {
		t.Fatalf("%s: bad command %q: %v", where, line, err)
	}
	c := &traceCmd{t: t, where: where, name: f[0], kv: map[string]string{}}
	f = f[1:]
	if c.name != "settings" && !(c.name == "start" && len(f) == 0) {
		if len(f) == 0 {
			t.Fatalf("%s: %s needs a time", where, c.name)
		}
		if c.now, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			t.Fatalf("%s: bad time %q", where, f[0])
		}
		f = f[1:]
	}
	for _, w := range f {
		if k, v, ok := strings.Cut(w, "="); ok {
			c.kv[k] = v
		} else {
			c.words = append(c.words, w)
		}
	}
	return c
}

func (c *traceCmd) flag(w string) bool {
	for _, x := range c.words {
		if x == w {
			return true
		}
	}
	return false
}

func (c *traceCmd) word(i int) string {
	if i >= len(c.words) {
		c.t.Fatalf("%s: %s needs %d positional arguments", c.where, c.name, i+1)
	}
	return c.words[i]
}

func (c *traceCmd) uint(key string) uint64 {
	v, ok := c.kv[key]
	if !ok {
		c.t.Fatalf("%s: %s needs %s=", c.where, c.name, key)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		c.t.Fatalf("%s: bad %s=%q", c.where, key, v)
	}
	return n
}

// settings parses "settings interval=1s timeout=5s initial-backoff=100ms
// max-backoff=1s registration-timeout=10s" (unset keys: defaults) and
// prints them or why they are invalid.
func (c *traceCmd) settings() (Settings, []string) {
	var s Settings
	fields := map[string]*time.Duration{
		"interval": &s.Interval, "timeout": &s.Timeout, "initial-backoff": &s.InitialBackoff,
		"max-backoff": &s.MaxBackoff, "registration-timeout": &s.RegistrationTimeout,
	}
	for k, v := range c.kv {
		p, ok := fields[k]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			c.t.Fatalf("%s: bad %s=%q", c.where, k, v)
		}
		*p = d
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return s, strings.Split("invalid: "+err.Error(), "\n")
	}
	return s, []string{fmt.Sprintf("interval=%v timeout=%v initial-backoff=%v max-backoff=%v registration-timeout=%v",
		s.Interval, s.Timeout, s.InitialBackoff, s.MaxBackoff, s.RegistrationTimeout)}
}

// TestMonitorTraces runs the JobManager's Monitor through testdata/monitor,
// in the style of etcd-raft's interaction tests. Commands (times in epoch
// ms):
//
//	settings interval=1s timeout=5s      settings for the next start (defaults for unset keys)
//	start                                a new Monitor
//	register T tm-1 [host=10.0.0.1]
//	heartbeat T tm-1 processed=N
//	end T tm-1 [peer-closed] cause="EOF"   its session stream ended
//	deregister T tm-1
//	tick T
//
// Every event prints the output's fields in the order the caller applies
// them, then the monitored targets. After every event the test checks the
// invariants (checkMonitor). Run with -rewrite to regenerate the expected
// output.
func TestMonitorTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/monitor/*.txt", 6, runMonitorTrace)
}

func runMonitorTrace(t *testing.T, path string) {
	blocks := goldentrace.Parse(t, path)
	rec := goldentrace.NewRecorder(path, *rewrite)
	var (
		s Settings
		m *Monitor
		k *monitorChecker
	)
	for _, blk := range blocks {
		where := fmt.Sprintf("%s:%d", path, blk.Line)
		c := parseCmd(t, where, blk.Cmd)
		var got []string
		if c.name == "settings" {
			s, got = c.settings()
			rec.Check(t, blk, got)
			continue
		}
		if c.name == "start" {
			m, k = NewMonitor(s), newMonitorChecker(s)
			rec.Check(t, blk, []string{m.String()})
			continue
		}
		if m == nil {
			t.Fatalf("%s: %s before start", where, c.name)
		}
		var o MonitorOutput
		switch c.name {
		case "register":
			o = m.Register(c.now, c.word(0), c.kv["host"])
		case "heartbeat":
			o = m.Heartbeat(c.now, c.word(0), c.uint("processed"))
		case "end":
			o = m.SessionEnded(c.now, c.word(0), c.kv["cause"], c.flag("peer-closed"))
		case "deregister":
			o = m.Deregister(c.now, c.word(0))
		case "tick":
			o = m.Tick(c.now)
		default:
			t.Fatalf("%s: unknown command %q", where, c.name)
		}
		if err := k.check(c, m, o); err != nil {
			t.Errorf("%s: %s: %v", where, blk.Cmd, err)
		}
		got = append(formatMonitorOutput(o), m.String())
		rec.Check(t, blk, got)
	}
	rec.Finish(t)
}

func formatMonitorOutput(o MonitorOutput) []string {
	var lines []string
	for _, l := range o.Lost {
		lines = append(lines, fmt.Sprintf("lost %s %s at=%d redeploy-at=%d: %s", l.Target, l.Cause, l.At, l.RedeployAt, l.Reason))
	}
	for _, id := range o.Reply {
		lines = append(lines, "reply "+id)
	}
	lines = append(lines, fmt.Sprintf("wake-at %d", o.WakeAt))
	return lines
}

// monitorChecker checks what must hold after every event, from the events
// alone: a target is lost by silence only when the test saw no heartbeat
// (or registration) of it within heartbeat.timeout, never twice, and
// WakeAt is the earliest deadline.
type monitorChecker struct {
	timeout, interval int64
	now               int64
	heard             map[string]int64 // per live target: its last registration or heartbeat
}

func newMonitorChecker(s Settings) *monitorChecker {
	return &monitorChecker{timeout: s.Timeout.Milliseconds(), interval: s.Interval.Milliseconds(), heard: map[string]int64{}}
}

func (k *monitorChecker) check(c *traceCmd, m *Monitor, o MonitorOutput) error {
	k.now = max(k.now, c.now)
	for _, l := range o.Lost {
		h, ok := k.heard[l.Target]
		if !ok {
			return fmt.Errorf("lost %s, which is not monitored", l.Target)
		}
		if l.Cause == Silence && k.now-h < k.timeout {
			return fmt.Errorf("%s lost by silence after %d ms < timeout %d", l.Target, k.now-h, k.timeout)
		}
		if l.RedeployAt < l.At || (l.Cause == Silence && l.RedeployAt != l.At+k.interval) {
			return fmt.Errorf("%s: redeploy-at %d for a loss at %d", l.Target, l.RedeployAt, l.At)
		}
		delete(k.heard, l.Target)
	}
	for id, h := range k.heard {
		if k.now-h >= k.timeout {
			return fmt.Errorf("%s silent for %d ms, not lost", id, k.now-h)
		}
	}
	switch c.name {
	case "register":
		k.heard[c.word(0)] = k.now
	case "heartbeat":
		if _, ok := k.heard[c.word(0)]; ok && len(o.Reply) == 1 {
			k.heard[c.word(0)] = k.now
		}
	}
	want := int64(0)
	for _, h := range k.heard {
		if want == 0 || h+k.timeout < want {
			want = h + k.timeout
		}
	}
	if o.WakeAt != want {
		return fmt.Errorf("wake-at %d, want %d", o.WakeAt, want)
	}
	if len(m.Targets()) != len(k.heard) {
		return fmt.Errorf("monitor has %v, test expects %d targets", m.Targets(), len(k.heard))
	}
	return nil
}

// TestMemberTraces runs the TaskManager's Member through testdata/member.
// Commands (times in epoch ms):
//
//	settings ...                         as for the Monitor
//	start T [seed=N]                     a new Member, started at T
//	registered T epoch=1 session=s1      the attempt in flight succeeded
//	failed T reason="connection refused" the attempt in flight failed
//	sent T seq=N                         the heartbeat asked for went out as seq N
//	reply T acked=N                      a HeartbeatReply acknowledging seq N
//	ended T cause="EOF"                  the session stream ended
//	tick T
//
// Every event prints the output's fields in the caller's order, then the
// Member's state. Run with -rewrite to regenerate the expected output.
func TestMemberTraces(t *testing.T) {
	goldentrace.RunAll(t, "testdata/member/*.txt", 6, runMemberTrace)
}

func runMemberTrace(t *testing.T, path string) {
	blocks := goldentrace.Parse(t, path)
	rec := goldentrace.NewRecorder(path, *rewrite)
	var (
		s Settings
		m *Member
	)
	for _, blk := range blocks {
		where := fmt.Sprintf("%s:%d", path, blk.Line)
		c := parseCmd(t, where, blk.Cmd)
		if c.name == "settings" {
			var got []string
			s, got = c.settings()
			rec.Check(t, blk, got)
			continue
		}
		if c.name != "start" && m == nil {
			t.Fatalf("%s: %s before start", where, c.name)
		}
		var o MemberOutput
		switch c.name {
		case "start":
			seed := uint64(1)
			if _, ok := c.kv["seed"]; ok {
				seed = c.uint("seed")
			}
			m = NewMember(s, seed)
			o = m.Start(c.now)
		case "registered":
			o = m.Registered(c.now, c.uint("epoch"), c.kv["session"])
		case "failed":
			o = m.RegisterFailed(c.now, c.kv["reason"])
		case "sent":
			o = m.HeartbeatSent(c.now, c.uint("seq"))
		case "reply":
			o = m.Reply(c.now, c.uint("acked"))
		case "ended":
			o = m.SessionEnded(c.now, c.kv["cause"])
		case "tick":
			o = m.Tick(c.now)
		default:
			t.Fatalf("%s: unknown command %q", where, c.name)
		}
		rec.Check(t, blk, append(formatMemberOutput(o), m.String()))
	}
	rec.Finish(t)
}

func formatMemberOutput(o MemberOutput) []string {
	var lines []string
	if o.Fence != "" {
		lines = append(lines, "fence: "+o.Fence)
	}
	if o.GiveUp != nil {
		lines = append(lines, "give up: "+o.GiveUp.Error())
	}
	if o.Register {
		lines = append(lines, "register")
	}
	if o.Heartbeat {
		lines = append(lines, "heartbeat")
	}
	return append(lines, fmt.Sprintf("wake-at %d", o.WakeAt))
}
