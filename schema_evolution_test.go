package weir_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/failure"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

// The state of the job before the change. Legacy is removed afterwards,
// Extra added, and the fields move.
type profileV1 struct {
	Count  int64
	Sum    int64
	Note   string
	Legacy int64
}

type profileV2 struct {
	Sum   int64
	Extra string
	Count int64
	Note  string
}

// profileBad changes Count's type: the restore must refuse it.
type profileBad struct {
	Count string
	Sum   int64
	Note  string
}

// Map user keys gain a field (removing one could merge keys).
type bucketV1 struct{ Bucket int64 }
type bucketV2 struct {
	Bucket int64
	Region string
}

type evEvent struct {
	Key string
	N   int64
}

// scoreCodecV1 and scoreCodecV2 are hand-written codecs of one state that
// declare their schema: version 1 writes 8 bytes big-endian, version 2 a
// decimal string, and migrates version 1's bytes (codec.Migrator).
type scoreCodecV1 struct{}

func (scoreCodecV1) AppendEncode(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}
func (scoreCodecV1) Decode(src []byte) (int64, int, error) {
	if len(src) < 8 {
		return 0, 0, codec.ErrTruncated
	}
	return int64(binary.BigEndian.Uint64(src)), 8, nil
}
func (scoreCodecV1) Schema() codec.Schema {
	return codec.Schema{Kind: codec.SchemaOpaque, Type: "test.score", Version: 1}
}

type scoreCodecV2 struct{}

func (scoreCodecV2) AppendEncode(dst []byte, v int64) []byte {
	return codec.String().AppendEncode(dst, strconv.FormatInt(v, 10))
}
func (scoreCodecV2) Decode(src []byte) (int64, int, error) {
	s, n, err := codec.String().Decode(src)
	if err != nil {
		return 0, 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, n, err
}
func (scoreCodecV2) Schema() codec.Schema {
	return codec.Schema{Kind: codec.SchemaOpaque, Type: "test.score", Version: 2}
}
func (scoreCodecV2) Migrate(old codec.Schema, data []byte) (int64, error) {
	if old.Type != "test.score" || old.Version != 1 {
		return 0, fmt.Errorf("cannot migrate score from %s", old)
	}
	v, _, err := scoreCodecV1{}.Decode(data)
	return v, err
}

// writerV1 is the job before the change: every state kind holds profileV1.
type writerV1 struct {
	profile state.ValueState[profileV1]
	recent  state.ListState[profileV1]
	buckets state.MapState[bucketV1, profileV1]
	reduced state.ReducingState[profileV1]
	agg     state.AggregatingState[int64, profileV1]
	score   state.ValueState[int64]
}

func (w *writerV1) Open(ctx weir.KeyedRuntimeContext) error {
	c := codec.MustFor[profileV1]()
	s := ctx.State()
	w.profile = state.GetValueState(s, state.ValueDescriptor[profileV1]{Name: "profile", Codec: c})
	w.recent = state.GetListState(s, state.ListDescriptor[profileV1]{Name: "recent", Codec: c})
	w.buckets = state.GetMapState(s, state.MapDescriptor[bucketV1, profileV1]{Name: "buckets", UserKeyCodec: codec.MustFor[bucketV1](), ValueCodec: c})
	w.reduced = state.GetReducingState(s, state.ReducingDescriptor[profileV1]{Name: "reduced", Codec: c, Reduce: func(a, b profileV1) profileV1 {
		return profileV1{Count: a.Count + b.Count, Sum: a.Sum + b.Sum, Note: b.Note, Legacy: a.Legacy + b.Legacy}
	}})
	w.agg = state.GetAggregatingState(s, state.AggregatingDescriptor[int64, profileV1, profileV1]{Name: "agg", AccCodec: c,
		Create: func() profileV1 { return profileV1{} },
		Add:    func(n int64, acc profileV1) profileV1 { acc.Count++; acc.Sum += n; acc.Legacy = -n; return acc },
		Result: func(acc profileV1) profileV1 { return acc }})
	w.score = state.GetValueState(s, state.ValueDescriptor[int64]{Name: "score", Codec: scoreCodecV1{}})
	return nil
}

func (w *writerV1) ProcessElement(_ weir.KeyedContext[string], e evEvent, _ weir.Collector[string]) error {
	p, _ := w.profile.Value()
	p.Count++
	p.Sum += e.N
	p.Note = "last=" + strconv.FormatInt(e.N, 10)
	p.Legacy = e.N * 7
	w.profile.Update(p)
	w.recent.Add(profileV1{Count: 1, Sum: e.N, Note: "n" + strconv.FormatInt(e.N, 10), Legacy: e.N})
	b := bucketV1{Bucket: e.N % 3}
	bp, _ := w.buckets.Get(b)
	bp.Count++
	bp.Sum += e.N
	bp.Legacy = 99
	w.buckets.Put(b, bp)
	w.reduced.Add(profileV1{Count: 1, Sum: e.N, Note: "r", Legacy: 1})
	w.agg.Add(e.N)
	sc, _ := w.score.Value()
	w.score.Update(sc + e.N*e.N)
	return nil
}

// evReport is what the changed job reads back for a key.
type evReport struct {
	Key     string
	Profile profileV2
	Recent  []profileV2
	Buckets []bucketEntry // sorted by bucket
	Reduced profileV2
	Agg     profileV2
	Score   int64
}

type bucketEntry struct {
	Key   bucketV2
	Value profileV2
}

// readerV2 is the job after the change: the same state names, profileV2.
type readerV2 struct {
	profile state.ValueState[profileV2]
	recent  state.ListState[profileV2]
	buckets state.MapState[bucketV2, profileV2]
	reduced state.ReducingState[profileV2]
	agg     state.AggregatingState[int64, profileV2]
	score   state.ValueState[int64]
}

func (r *readerV2) Open(ctx weir.KeyedRuntimeContext) error {
	c := codec.MustFor[profileV2]()
	s := ctx.State()
	r.profile = state.GetValueState(s, state.ValueDescriptor[profileV2]{Name: "profile", Codec: c})
	r.recent = state.GetListState(s, state.ListDescriptor[profileV2]{Name: "recent", Codec: c})
	r.buckets = state.GetMapState(s, state.MapDescriptor[bucketV2, profileV2]{Name: "buckets", UserKeyCodec: codec.MustFor[bucketV2](), ValueCodec: c})
	r.reduced = state.GetReducingState(s, state.ReducingDescriptor[profileV2]{Name: "reduced", Codec: c, Reduce: func(a, b profileV2) profileV2 { return b }})
	r.agg = state.GetAggregatingState(s, state.AggregatingDescriptor[int64, profileV2, profileV2]{Name: "agg", AccCodec: c,
		Create: func() profileV2 { return profileV2{} },
		Add:    func(_ int64, acc profileV2) profileV2 { return acc },
		Result: func(acc profileV2) profileV2 { return acc }})
	r.score = state.GetValueState(s, state.ValueDescriptor[int64]{Name: "score", Codec: scoreCodecV2{}})
	return nil
}

func (r *readerV2) ProcessElement(ctx weir.KeyedContext[string], _ evEvent, out weir.Collector[evReport]) error {
	rep := evReport{Key: ctx.CurrentKey()}
	rep.Profile, _ = r.profile.Value()
	rep.Recent = r.recent.Get()
	for k, v := range r.buckets.All() {
		rep.Buckets = append(rep.Buckets, bucketEntry{k, v})
	}
	slices.SortFunc(rep.Buckets, func(a, b bucketEntry) int { return int(a.Key.Bucket - b.Key.Bucket) })
	rep.Reduced, _ = r.reduced.Get()
	rep.Agg, _ = r.agg.Get()
	rep.Score, _ = r.score.Value()
	out.Collect(rep)
	return nil
}

// badReader declares "profile" with Count changed from int64 to string.
type badReader struct{ profile state.ValueState[profileBad] }

func (b *badReader) Open(ctx weir.KeyedRuntimeContext) error {
	b.profile = state.GetValueState(ctx.State(), state.ValueDescriptor[profileBad]{Name: "profile", Codec: codec.MustFor[profileBad]()})
	return nil
}

func (b *badReader) ProcessElement(weir.KeyedContext[string], evEvent, weir.Collector[evReport]) error {
	return nil
}

// expectedReports is the independent computation: what each key's state
// holds after the events, written in profileV2's terms (kept fields
// intact, Extra zero).
func expectedReports(events []evEvent) map[string]evReport {
	out := map[string]evReport{}
	for _, e := range events {
		r := out[e.Key]
		r.Key = e.Key
		r.Profile.Count++
		r.Profile.Sum += e.N
		r.Profile.Note = "last=" + strconv.FormatInt(e.N, 10)
		r.Recent = append(r.Recent, profileV2{Count: 1, Sum: e.N, Note: "n" + strconv.FormatInt(e.N, 10)})
		i := slices.IndexFunc(r.Buckets, func(b bucketEntry) bool { return b.Key.Bucket == e.N%3 })
		if i < 0 {
			r.Buckets = append(r.Buckets, bucketEntry{Key: bucketV2{Bucket: e.N % 3}})
			i = len(r.Buckets) - 1
		}
		r.Buckets[i].Value.Count++
		r.Buckets[i].Value.Sum += e.N
		r.Reduced.Count++
		r.Reduced.Sum += e.N
		r.Reduced.Note = "r"
		r.Agg.Count++
		r.Agg.Sum += e.N
		r.Score += e.N * e.N
		out[e.Key] = r
	}
	for k, r := range out {
		slices.SortFunc(r.Buckets, func(a, b bucketEntry) int { return int(a.Key.Bucket - b.Key.Bucket) })
		out[k] = r
	}
	return out
}

// runEvolveJob runs events -> keyBy -> fn (uid "evolve") with checkpoints
// in dir, resuming from the latest when resume is set, and returns what
// fn emitted. The source's uid differs per run, so that the resumed job
// reads its own input instead of resuming the first run's position.
func runEvolveJob[OUT any](t *testing.T, cfg weir.Config, dir, sourceUID string, events []evEvent, resume bool,
	fn weir.KeyedProcessFunction[string, evEvent, OUT]) ([]OUT, error) {
	t.Helper()
	cfg.Parallelism = 2
	cfg.Checkpointing = &weir.CheckpointConfig{Interval: time.Hour, Dir: dir, Incremental: cfg.Checkpointing != nil && cfg.Checkpointing.Incremental}
	if resume {
		cfg.ResumeFrom, cfg.AllowNonRestoredState = "latest", true
	}
	env := weir.NewEnvironment(cfg)
	src := weir.FromSlice(env, events).UID(sourceUID)
	keyed := weir.KeyBy(src, func(e evEvent) string { return e.Key })
	outs := weir.ProcessKeyed[string, evEvent, OUT](keyed, fn).Name("Evolve").UID("evolve")
	c := weir.Collect(outs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job, err := env.ExecuteAsync(ctx, "schema-evolution")
	if err != nil {
		return nil, err
	}
	var got []OUT
	for v := range c.All() {
		got = append(got, v)
	}
	_, err = job.Wait(ctx)
	return got, err
}

// A savepoint-like final checkpoint of a job whose state is a struct
// restores into a job whose struct lost one field and gained another (the
// fields also moved), on both backends and from native Pebble checkpoints:
// every key's kept fields equal an independent computation, in value,
// list, map (values and keys), reducing and aggregating state; a
// hand-written codec's declared migration is used; and a changed field
// type is refused at once, naming the state, the field and both types.
func TestSchemaEvolutionOnRestore(t *testing.T) {
	r := testseed.Rand(t, 1)
	var events []evEvent
	for range 600 {
		events = append(events, evEvent{Key: "k" + strconv.Itoa(r.IntN(40)), N: r.Int64N(1000)})
	}
	want := expectedReports(events)
	var probes []evEvent
	for k := range want {
		probes = append(probes, evEvent{Key: k})
	}
	for _, tc := range []struct {
		name string
		cfg  weir.Config
	}{
		{"hashmap", weir.Config{}},
		{"pebble", weir.Config{StateBackend: "pebble"}},
		{"pebble-native", weir.Config{StateBackend: "pebble", Checkpointing: &weir.CheckpointConfig{Incremental: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := runEvolveJob[string](t, tc.cfg, dir, "events", events, false, &writerV1{}); err != nil {
				t.Fatalf("first run: %v", err)
			}
			start := time.Now()
			_, err := runEvolveJob[evReport](t, tc.cfg, dir, "probes", probes, true, &badReader{})
			if err == nil {
				t.Fatal("restoring profile with Count changed from int64 to string succeeded")
			}
			for _, w := range []string{`state "profile"`, "profileBad.Count", "int64", "string"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if !failure.IsPermanent(err) {
				t.Errorf("the refusal is not a permanent failure: %v", err)
			}
			t.Logf("refused: %v", err)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the refused restore took %v: it should fail at once", d)
			}

			got, err := runEvolveJob[evReport](t, tc.cfg, dir, "probes", probes, true, &readerV2{})
			if err != nil {
				t.Fatalf("restoring into the changed struct: %v", err)
			}
			check := func(got []evReport) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%d reports, want %d", len(got), len(want))
				}
				for _, g := range got {
					if w := want[g.Key]; !reflect.DeepEqual(g, w) {
						t.Fatalf("key %s:\n got %+v\nwant %+v", g.Key, g, w)
					}
				}
			}
			check(got)
			// The migrated state was checkpointed under its new schema
			// at the end of that run: it restores again, unchanged.
			got, err = runEvolveJob[evReport](t, tc.cfg, dir, "probes-again", probes, true, &readerV2{})
			if err != nil {
				t.Fatalf("restoring the migrated state: %v", err)
			}
			check(got)
		})
	}
}
