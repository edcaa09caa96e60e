package nexmark

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirhq/weir/clock"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/source"
)

// The source is driven here the way the runtime drives it: an enumerator
// assigning splits to readers, readers polled in random order, checkpoints
// (reader splits plus enumerator state) and restores at other
// parallelisms. (connector/internal/sourcetest does the same for the
// connectors but is not importable from here.)

type fakeEnumCtx struct {
	p      int
	assign map[int][]Split
	noMore map[int]bool
}

func (c *fakeEnumCtx) Parallelism() int              { return c.p }
func (c *fakeEnumCtx) Assign(i int, splits ...Split) { c.assign[i] = append(c.assign[i], splits...) }
func (c *fakeEnumCtx) NoMoreSplits(i int)            { c.noMore[i] = true }
func (c *fakeEnumCtx) Registered() []int             { return nil }
func (c *fakeEnumCtx) deliver(i int, r *fakeReader) { // hands over what was assigned to i
	if s := c.assign[i]; len(s) > 0 {
		r.r.AddSplits(encodeDecode(s))
		c.assign[i] = nil
	}
	if c.noMore[i] {
		r.r.NoMoreSplits()
	}
}

type fakeReaderCtx struct{ i, p int }

func (c fakeReaderCtx) Subtask() int       { return c.i }
func (c fakeReaderCtx) Parallelism() int   { return c.p }
func (c fakeReaderCtx) RequestSplit()      {}
func (c fakeReaderCtx) Clock() clock.Clock { return clock.System{} }

// fakeReader is one reader and the output it emits into. Events are kept
// as their JSON lines, so later reuse of buffers cannot change them.
type fakeReader struct {
	r     source.Reader[Event, Split]
	got   []string
	yield int // ShouldYield every yield-th call (0: never)
	calls int
	done  bool
}

func (f *fakeReader) Collect(v Event)                       { f.got = append(f.got, string(AppendJSON(nil, &v))) }
func (f *fakeReader) CollectWithTimestamp(v Event, _ int64) { f.Collect(v) }
func (f *fakeReader) CollectBatch(vs []Event) {
	for i := range vs {
		f.Collect(vs[i])
	}
}
func (f *fakeReader) ShouldYield() bool {
	f.calls++
	return f.yield > 0 && f.calls%f.yield == 0
}
func (f *fakeReader) ForSplit(string) source.SplitOutput[Event] { return splitOut{f} }
func (f *fakeReader) ReleaseSplit(string)                       {}

type splitOut struct{ *fakeReader }

func (splitOut) EmitWatermark(int64) {}
func (splitOut) MarkIdle()           {}

// encodeDecode passes splits through their codec, as checkpoints and
// assignments do.
func encodeDecode(splits []Split) []Split {
	var out []Split
	for _, s := range splits {
		b := splitCodec{}.AppendEncode(nil, s)
		d, n, err := splitCodec{}.Decode(b)
		if err != nil || n != len(b) || d != s {
			panic(fmt.Sprintf("split %v: decoded %v, %d of %d bytes, %v", s, d, n, len(b), err))
		}
		out = append(out, d)
	}
	return out
}

type fakeJob struct {
	src     Source
	ctx     *fakeEnumCtx
	enum    source.Enumerator[Split]
	readers []*fakeReader
}

func startJob(t *testing.T, src Source, p int, enumState []byte, splits []Split, rng *rand.Rand) *fakeJob {
	t.Helper()
	ctx := &fakeEnumCtx{p: p, assign: map[int][]Split{}, noMore: map[int]bool{}}
	enum, err := src.CreateEnumerator(ctx, enumState)
	if err != nil {
		t.Fatal(err)
	}
	j := &fakeJob{src: src, ctx: ctx, enum: enum}
	// Restored reader splits go to reader j mod p, as the runtime
	// redistributes operator state.
	for i := range p {
		r, err := src.CreateReader(fakeReaderCtx{i, p})
		if err != nil {
			t.Fatal(err)
		}
		f := &fakeReader{r: r, yield: rng.IntN(4)}
		var mine []Split
		for k, s := range splits {
			if k%p == i {
				mine = append(mine, s)
			}
		}
		if len(mine) > 0 {
			r.AddSplits(mine)
		}
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		if err := enum.AddReader(i); err != nil {
			t.Fatal(err)
		}
		ctx.deliver(i, f)
		j.readers = append(j.readers, f)
	}
	return j
}

// step polls one random reader once; false when every reader is done.
func (j *fakeJob) step(t *testing.T, rng *rand.Rand) bool {
	t.Helper()
	var live []*fakeReader
	for _, f := range j.readers {
		if !f.done {
			live = append(live, f)
		}
	}
	if len(live) == 0 {
		return false
	}
	f := live[rng.IntN(len(live))]
	st, _, _, err := f.r.PollNext(f)
	if err != nil {
		t.Fatal(err)
	}
	f.done = st == source.EndOfInput
	return true
}

// checkpoint returns the enumerator's state and every reader's splits.
func (j *fakeJob) checkpoint(t *testing.T, id int64) ([]byte, []Split) {
	t.Helper()
	st, err := j.enum.Snapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	var splits []Split
	for _, f := range j.readers {
		s, err := f.r.SnapshotState(id)
		if err != nil {
			t.Fatal(err)
		}
		splits = append(splits, encodeDecode(s)...)
	}
	return st, splits
}

func (j *fakeJob) all() []string {
	var out []string
	for _, f := range j.readers {
		out = append(out, f.got...)
	}
	return out
}

// reference is the stream generated in order by one generator.
func reference(t *testing.T, cfg Config) []string {
	g := mustGenerator(t, cfg)
	var e Event
	out := make([]string, cfg.Events)
	for n := range cfg.Events {
		g.Event(n, &e)
		out[n] = string(AppendJSON(nil, &e))
	}
	return out
}

func sameMultiset(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: event sets differ, e.g. %s vs %s", what, got[i], want[i])
		}
	}
}

// TestSourceParallelism checks that parallelism 1 and 3 emit the same
// events, the single reader in event order.
func TestSourceParallelism(t *testing.T) {
	rng := testseed.Rand(t, 0)
	cfg := DefaultConfig()
	cfg.Events = 10_007
	want := reference(t, cfg)
	for _, p := range []int{1, 3, 4, 16} {
		j := startJob(t, Source{cfg}, p, nil, nil, rng)
		for j.step(t, rng) {
		}
		got := j.all()
		if p == 1 && !slices.Equal(got, want) {
			t.Fatalf("parallelism 1 is not the stream in order")
		}
		sameMultiset(t, fmt.Sprintf("parallelism %d", p), got, want)
	}
}

// TestSourceCheckpointRestore fails the source at random points and
// restores the last checkpoint at a random parallelism: what was emitted
// before the checkpoint plus everything after the restore is every event
// exactly once.
func TestSourceCheckpointRestore(t *testing.T) {
	rng := testseed.Rand(t, 1)
	cfg := DefaultConfig()
	cfg.Events = 20_011
	want := reference(t, cfg)
	for round := range 20 {
		p := 1 + rng.IntN(5)
		j := startJob(t, Source{cfg}, p, nil, nil, rng)
		var accepted []string // emitted up to the latest checkpoint
		var cpEnum []byte
		var cpSplits []Split
		var cpRecords []string
		haveCP := false
		for failures := 0; ; {
			live := j.step(t, rng)
			if live && rng.IntN(6) == 0 {
				cpEnum, cpSplits = j.checkpoint(t, int64(round))
				cpRecords = append(slices.Clone(accepted), j.all()...)
				haveCP = true
			}
			if live && failures < 3 && rng.IntN(10) == 0 {
				failures++
				p = 1 + rng.IntN(5)
				if haveCP {
					accepted = slices.Clone(cpRecords)
					j = startJob(t, Source{cfg}, p, cpEnum, cpSplits, rng)
				} else {
					accepted = nil
					j = startJob(t, Source{cfg}, p, nil, nil, rng)
				}
				continue
			}
			if !live {
				break
			}
		}
		sameMultiset(t, fmt.Sprintf("round %d", round), append(accepted, j.all()...), want)
	}
}

// TestSourceUnbounded checks that without Events the source goes on, each
// reader's events in step with the others'.
func TestSourceUnbounded(t *testing.T) {
	rng := testseed.Rand(t, 2)
	cfg := DefaultConfig()
	src := Source{cfg}
	if src.Boundedness() != source.Unbounded {
		t.Fatal("a source without Events is bounded")
	}
	j := startJob(t, src, 2, nil, nil, rng)
	for range 50 {
		j.step(t, rng)
	}
	if len(j.all()) < 50*64 {
		t.Fatalf("%d events after 50 polls", len(j.all()))
	}
}

// TestSourceRejectsOtherConfig checks that splits checkpointed under one
// configuration are not read by a source with another.
func TestSourceRejectsOtherConfig(t *testing.T) {
	rng := testseed.Rand(t, 3)
	cfg := DefaultConfig()
	cfg.Events = 1000
	j := startJob(t, Source{cfg}, 2, nil, nil, rng)
	j.step(t, rng)
	_, splits := j.checkpoint(t, 1)
	other := cfg
	other.Seed = 7
	r, err := Source{other}.CreateReader(fakeReaderCtx{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	r.AddSplits(splits)
	if err := r.Start(); err == nil {
		t.Fatal("a split of another configuration was accepted")
	}
}

func TestSplitCodecCorrupt(t *testing.T) {
	s := Split{Subtask: 2, Parallelism: 3, Next: 5, End: 100, Config: 42}
	b := splitCodec{}.AppendEncode(nil, s)
	for i := range len(b) {
		if _, _, err := (splitCodec{}).Decode(b[:i]); err == nil {
			t.Errorf("decoded a split from %d of %d bytes", i, len(b))
		}
	}
	bad := splitCodec{}.AppendEncode(nil, Split{Subtask: 1, Parallelism: 3, Next: 5, End: 100})
	if _, _, err := (splitCodec{}).Decode(bad); err == nil {
		t.Error("decoded a split whose position is not its subtask's")
	}
	if _, err := decodeEnumState([]byte{splitFormat, 200}); err == nil {
		t.Error("decoded an enumerator state claiming 200 splits in no bytes")
	}
}
