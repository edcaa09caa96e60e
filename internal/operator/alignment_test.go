package operator

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/opcoordinator"
	"github.com/weirhq/weir/source"
)

// fakeCoordContext is an opcoordinator.Context whose events are logged; shared
// is the job's shared objects.
type fakeCoordContext struct {
	p      int
	shared map[string]any
	sent   *[]string
	name   string
}

func (f fakeCoordContext) SendEvent(subtask int, p []byte) {
	wm, _ := binary.Varint(p[1:])
	*f.sent = append(*f.sent, fmt.Sprintf("%s/%d %c %s", f.name, subtask, p[0], fmtWM(wm)))
}
func (f fakeCoordContext) Parallelism() int { return f.p }
func (f fakeCoordContext) Shared(key string, create func() any) any {
	if v, ok := f.shared[key]; ok {
		return v
	}
	v := create()
	f.shared[key] = v
	return v
}

func fmtWM(wm int64) string {
	switch wm {
	case math.MinInt64:
		return "min"
	case math.MaxInt64:
		return "max"
	}
	return fmt.Sprint(wm)
}

func report(st byte, wm int64) []byte {
	return binary.AppendVarint([]byte{eventWatermarkReport, st}, wm)
}

// The coordinators of two sources share their group: every reader is
// held at the minimum until it reports; every report is answered; idle and finished readers leave the
// minimum; a source with another drift, a bad report or a bad setting are
// errors that say what was wrong.
func TestAlignmentCoordinators(t *testing.T) {
	var sent []string
	shared := map[string]any{}
	a := Alignment{Group: "g", MaxDrift: 100, Interval: 10}
	mk := func(name string, p int, al Alignment) (opcoordinator.Coordinator, error) {
		f := coordinatorFactory[int64, string]{src: scriptSource{}, align: &al}
		return f.CreateCoordinator(fakeCoordContext{p: p, shared: shared, sent: &sent, name: name}, nil)
	}
	x, err := mk("x", 2, a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := mk("y", 1, a)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		c       opcoordinator.Coordinator
		subtask int
		p       []byte
	}{
		{x, 0, report(reportActive, 1000)}, // x/1 and y/0 not reported: held at min
		{x, 1, report(reportActive, 500)},  // y/0 still holds
		{y, 0, report(reportActive, 50)},   // min 50
		{x, 0, report(reportActive, 1000)}, // 150 now
		{x, 0, report(reportActive, 1000)}, // unchanged: answered too (an answer may be lost)
		{y, 0, report(reportIdle, 50)},     // min 500
		{x, 1, report(reportFinished, 0)},  // min 1000
		{x, 0, report(reportFinished, 0)},  // none counts: max
		{y, 0, report(reportActive, 2000)}, // back: 2000
	}
	for _, s := range steps {
		if err := s.c.HandleEvent(s.subtask, s.p); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"x/0 L -9223372036854775708", "x/1 L -9223372036854775708", "y/0 L 150", "x/0 L 150", "x/0 L 150",
		"y/0 L 600", "x/1 L 1100", "x/0 L max", "y/0 L 2100"}
	if !slices.Equal(sent, want) {
		t.Errorf("answers\n%q\nwant\n%q", sent, want)
	}

	for _, tc := range []struct {
		err string
		run func() error
	}{
		{"one source allows a drift of 100 ms, another 5 ms", func() error { _, err := mk("z", 1, Alignment{Group: "g", MaxDrift: 5, Interval: 10}); return err }},
		{"the max drift is -1 ms", func() error { _, err := mk("z", 1, Alignment{Group: "h", MaxDrift: -1, Interval: 10}); return err }},
		{"the update interval is 1 ms; it must be at least 10 ms", func() error { _, err := mk("z", 1, Alignment{Group: "h", Interval: 1}); return err }},
		{"the group name is empty", func() error { _, err := mk("z", 1, Alignment{Interval: 10}); return err }},
		{"a report of 1 bytes", func() error { return x.HandleEvent(0, []byte{eventWatermarkReport, 0}) }},
		{"unknown status 9", func() error { return x.HandleEvent(0, report(9, 0)) }},
		{"a report from subtask 5 of 2", func() error { return x.HandleEvent(5, report(reportActive, 0)) }},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("got error %v, want one saying %q", err, tc.err)
		}
	}
}

// pausingReader is a scriptSource reader that logs PauseOrResumeSplits.
type pausingReader struct {
	scriptReader
	log *[]string
}

func (r *pausingReader) PauseOrResumeSplits(pause, resume []string) {
	*r.log = append(*r.log, fmt.Sprintf("pause %v resume %v", pause, resume))
}

type pausingSource struct {
	scriptSource
	log *[]string
}

func (s pausingSource) CreateReader(source.ReaderContext) (source.Reader[int64, string], error) {
	return &pausingReader{scriptReader{steps: s.steps}, s.log}, nil
}

// A source with alignment: it reports at open and every interval, polls
// only once the group answered, stops polling while its watermark is
// beyond the allowed one (ShouldYield tells the reader at once), pauses
// the splits beyond it through SplitPauser and resumes them when the
// allowed watermark moves, and reports its end.
func TestAlignedSourcePausesAndResumes(t *testing.T) {
	var log []string
	polls := 0
	var a, b source.SplitOutput[int64]
	steps := []func(out source.Output[int64]){
		func(out source.Output[int64]) {
			polls++
			a, b = out.ForSplit("a"), out.ForSplit("b")
			a.CollectWithTimestamp(0, 100)
			b.CollectWithTimestamp(0, 300)
			log = append(log, fmt.Sprint("should yield ", out.ShouldYield()))
		},
		func(out source.Output[int64]) {
			polls++
			a.CollectWithTimestamp(0, 400)
			log = append(log, fmt.Sprint("should yield ", out.ShouldYield()))
		},
		func(out source.Output[int64]) { polls++ },
	}
	clk := clock.NewManual(0)
	cur := 0
	ctx := NewContext(&cur, 0)
	ctx.Clock = clk
	ctx.SendEvent = func(p []byte) {
		if p[0] != eventWatermarkReport {
			return // the enumerator's
		}
		wm, _ := binary.Varint(p[2:])
		log = append(log, fmt.Sprintf("report %d %s", p[1], fmtWM(wm)))
	}
	rec := &eventLog{}
	fac, _ := NewSourceFactoryWithWatermarks[int64, string](pausingSource{scriptSource{steps}, &log},
		SourceWatermarks[int64]{Interval: 1000, NewGenerator: func() WatermarkGenerator[int64] { return &punct{} },
			Align: &Alignment{Group: "g", MaxDrift: 50, Interval: 10}})
	inst, err := fac.Create(ctx, Input[int64](rec))
	if err != nil {
		t.Fatal(err)
	}
	src := inst.Source.(*watermarkedSource[int64, string])
	if err := src.Open(ctx); err != nil {
		t.Fatal(err)
	}
	answer := func(wm int64) {
		log = append(log, "answer "+fmtWM(wm))
		if err := src.HandleOperatorEvent(binary.AppendVarint([]byte{eventAllowedWatermark}, wm)); err != nil {
			t.Fatal(err)
		}
	}
	poll := func() {
		st, wake, retry, err := src.PollNext()
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, fmt.Sprintf("poll %d: status %d wake %v retry %d", polls, st, wake != nil, retry))
	}
	tick := func() { clk.Advance(10); src.OnProcessingTime(clk.NowMillis()) }
	poll()       // not answered yet: no poll of the reader
	answer(1000) // allowed 1000
	poll()       // a at 99, b at 299: source 99
	answer(200)  // b beyond: paused
	tick()       // report 99
	poll()       // a at 399: source 299 > 200: blocked, and ShouldYield said so
	poll()       // blocked: the reader is not polled
	answer(350)  // b resumed (a stays paused); source 299 <= 350
	poll()       // the last step
	poll()       // the end, reported at once
	tick()
	want := []string{
		"report 0 min",
		"poll 0: status 1 wake false retry 10",
		"answer 1000",
		"should yield false",
		"poll 1: status 0 wake false retry 0",
		"answer 200",
		"pause [b] resume []",
		"report 0 99",
		"should yield true",
		"pause [a] resume []",
		"poll 2: status 0 wake false retry 0",
		"poll 2: status 1 wake false retry 10",
		"answer 350",
		"pause [] resume [b]", // a was paused already
		"poll 3: status 0 wake false retry 0",
		"report 2 299",
		"poll 3: status 2 wake false retry 0",
		"report 2 299",
	}
	if !slices.Equal(log, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// punct emits max timestamp - 1 after every record.
type punct struct{ max int64 }

func (p *punct) OnEvent(_ int64, ts int64, out WatermarkEmitter) {
	if ts > p.max {
		p.max = ts
		out.EmitWatermark(ts - 1)
	}
}
func (p *punct) OnPeriodicEmit(WatermarkEmitter) {}

// keptCoordContext keeps every payload as given, as the JobManager does: it
// reaches the subtask later, as mail on the task's goroutine.
type keptCoordContext struct {
	fakeCoordContext
	kept *[][]byte
}

func (k keptCoordContext) SendEvent(_ int, p []byte) { *k.kept = append(*k.kept, p) }

// An answer is the coordinator's to give away: the next report (of any
// subtask) must not write into an answer not delivered yet. (They shared one
// buffer: the task read an answer while the JobManager wrote the next one, a
// data race that could give a subtask another answer or a torn one, which it
// rejects as corrupt, failing the job.)
func TestAlignmentAnswersAreNotReused(t *testing.T) {
	var sent []string
	var kept [][]byte
	ctx := keptCoordContext{fakeCoordContext{p: 2, shared: map[string]any{}, sent: &sent, name: "x"}, &kept}
	f := coordinatorFactory[int64, string]{src: scriptSource{}, align: &Alignment{Group: "g", MaxDrift: 100, Interval: 10}}
	c, err := f.CreateCoordinator(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		subtask int
		wm      int64
	}{{0, 1000}, {1, 5}, {1, 1 << 40}} {
		if err := c.HandleEvent(r.subtask, report(reportActive, r.wm)); err != nil {
			t.Fatal(err)
		}
	}
	want := []int64{math.MinInt64 + 100, 105, 1100}
	for i, p := range kept {
		wm, k := binary.Varint(p[1:])
		if p[0] != eventAllowedWatermark || k != len(p)-1 || wm != want[i] {
			t.Errorf("answer %d is %x (allowed %d), want %d", i, p, wm, want[i])
		}
	}
}
