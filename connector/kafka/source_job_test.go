package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/internal/testseed"
	"github.com/weirhq/weir/state"
)

func fakeKafka(t *testing.T, topic string, partitions int32) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()
}

// produceTo writes values to one partition with the given timestamps.
func produceTo(t *testing.T, addrs []string, topic string, partition int32, vals []string, ts func(i int) int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v), Timestamp: time.UnixMilli(ts(i))}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// The source in a real job on the embedded cluster: partitions read in
// parallel, a failure injected after a checkpoint completed and the job
// restored, then the job canceled and resumed from its latest checkpoint
// at another parallelism; every record reaches the keyed state exactly once
// (no count above 1, none missing), the consumer group gets the offsets of
// completed checkpoints, and REST shows the reader's lag metrics.
func TestJobExactlyOnceAcrossFailureAndRescale(t *testing.T) {
	rng := testseed.Rand(t, 31)
	const parts = 4
	addrs := fakeKafka(t, "orders", parts)
	var want []string
	batch := func(from, n int) {
		for p := range int32(parts) {
			var vals []string
			for i := from; i < from+n; i++ {
				vals = append(vals, fmt.Sprintf("p%d-%d", p, i))
			}
			want = append(want, vals...)
			produceTo(t, addrs, "orders", p, vals, func(i int) int64 { return int64(from + i) })
		}
	}
	batch(0, 300+rng.IntN(300))
	dir := t.TempDir()
	var mu sync.Mutex
	maxCount := map[string]int64{}
	seen := func() (all bool, dup string) {
		mu.Lock()
		defer mu.Unlock()
		for v, c := range maxCount {
			if c > 1 {
				return false, v
			}
		}
		for _, v := range want {
			if maxCount[v] == 0 {
				return false, ""
			}
		}
		return true, ""
	}
	var completed atomic.Int64
	var failed atomic.Bool
	build := func(p int, resume string, fail bool) *weir.Job {
		env := weir.NewEnvironment(weir.Config{
			Parallelism: 2, ResumeFrom: resume, RESTAddr: "127.0.0.1:0", RESTPortFallback: true,
			Checkpointing: &weir.CheckpointConfig{Interval: 20 * time.Millisecond, Dir: dir, Retained: 1},
			Restart: map[string]string{"restart-strategy.type": "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "3", "restart-strategy.fixed-delay.delay": "10ms"},
			OnCheckpoint: func(id int64, _ bool) { completed.Store(id) },
		})
		src, err := kafka.NewSource(kafka.SourceConfig{Brokers: addrs, Topics: []string{"orders"}, Group: "weir-job",
			MaxBufferedRecords: 50, DiscoveryInterval: 50 * time.Millisecond}, kafka.StringValue())
		if err != nil {
			t.Fatal(err)
		}
		s := weir.FromSource(env, src, "orders").UID("orders").SetParallelism(p)
		s = weir.Map(s, func(v string) string {
			if fail && completed.Load() > 0 && failed.CompareAndSwap(false, true) {
				panic(errors.New("injected failure"))
			}
			return v
		})
		weir.Discard(weir.ProcessKeyed[string, string, string](weir.KeyBy(s, func(v string) string { return v }),
			weir.KeyedProcessFunc[string, string, string](func(ctx weir.KeyedContext[string], v string, out weir.Collector[string]) error {
				st := state.GetValueState(ctx.State(), state.ValueDescriptor[int64]{Name: "n", Codec: codec.Int64()})
				n, _ := st.Value()
				st.Update(n + 1)
				mu.Lock()
				maxCount[v] = max(maxCount[v], n+1)
				mu.Unlock()
				return nil
			})).UID("count"))
		j, err := env.ExecuteAsync(context.Background(), "kafka-exactly-once")
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	waitAll := func(j *weir.Job, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			all, dup := seen()
			if dup != "" {
				t.Fatalf("%s: record %q reached the keyed state twice", what, dup)
			}
			if all {
				return
			}
			select {
			case <-j.Done():
				t.Fatalf("%s: the job ended", what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not every record was read", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	j := build(2, "", true)
	for completed.Load() == 0 {
		time.Sleep(2 * time.Millisecond)
	}
	batch(5_000, 100+rng.IntN(300)) // the first of these fails the job
	waitAll(j, "first job")
	if !failed.Load() {
		t.Fatal("the injected failure did not happen")
	}
	// A checkpoint after everything was read, then cancel.
	after := completed.Load()
	for completed.Load() < after+2 {
		time.Sleep(5 * time.Millisecond)
	}
	checkREST(t, j)
	j.Cancel()
	<-j.Done()

	batch(10_000, 200)
	j2 := build(3, "latest", false)
	defer func() { j2.Cancel(); <-j2.Done() }()
	waitAll(j2, "resumed job at parallelism 3")
	if j2.RestoredFrom() == "" {
		t.Fatal("the second job did not restore")
	}
	// Committed offsets reach the end of every partition.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rs, err := adm.FetchOffsets(context.Background(), "weir-job")
		ok := err == nil
		ends.Each(func(e kadm.ListedOffset) {
			if o, found := rs.Lookup(e.Topic, e.Partition); !found || o.At != e.Offset {
				ok = false
			}
		})
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed %v, want the end offsets %v", rs, ends)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkREST finds the source's Kafka metrics on its vertex in the REST API,
// in Flink's [{"id":...,"value":"..."}] shape, with the readers' positions.
func checkREST(t *testing.T, j *weir.Job) {
	t.Helper()
	base := "http://" + j.RESTAddr() + "/jobs/" + j.ID()
	var job struct {
		Vertices []struct{ ID, Name string }
	}
	getJSON(t, base, &job)
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, v := range job.Vertices {
			var ids []struct{ ID string }
			getJSON(t, base+"/vertices/"+v.ID+"/metrics", &ids)
			var want []string
			for _, m := range ids {
				if strings.Contains(m.ID, ".KafkaSourceReader.") || strings.HasSuffix(m.ID, ".pendingRecords") {
					want = append(want, m.ID)
				}
			}
			if len(want) == 0 {
				continue
			}
			var vals []struct{ ID, Value string }
			getJSON(t, base+"/vertices/"+v.ID+"/metrics?get="+url.QueryEscape(strings.Join(want, ",")), &vals)
			positions, lags := 0, 0
			for _, m := range vals {
				if strings.HasSuffix(m.ID, ".currentOffset") && m.Value != "0" {
					positions++
				}
				if strings.HasSuffix(m.ID, ".recordsLag") {
					lags++
				}
			}
			if positions == 4 && lags == 4 {
				t.Logf("source metrics: %v", vals)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no vertex shows the Kafka source's positions of its 4 partitions and their lag")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
}

// Each partition has its own watermark: a reader holding a partition of
// old events and one of new events does not make the old ones late, in
// whatever order it reads them.
func TestJobPerPartitionWatermarks(t *testing.T) {
	addrs := fakeKafka(t, "wm", 2)
	const n = 3000
	vals := func(p int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("p%d-%d", p, i)
		}
		return out
	}
	produceTo(t, addrs, "wm", 0, vals(0), func(i int) int64 { return int64(i) })
	produceTo(t, addrs, "wm", 1, vals(1), func(i int) int64 { return 1_000_000 + int64(i) })
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, AutoWatermarkInterval: 5 * time.Millisecond})
	src, err := kafka.NewSource(kafka.SourceConfig{Brokers: addrs, Topics: []string{"wm"}, Bounded: true}, kafka.StringValue())
	if err != nil {
		t.Fatal(err)
	}
	s := weir.FromSourceWithWatermarks(env, src, weir.WatermarkStrategy[string]{Generator: weir.PunctuatedWatermarks[string](0)}, "wm")
	var late, total atomic.Int64
	var maxWM atomic.Int64
	maxWM.Store(math.MinInt64)
	weir.Discard(weir.ProcessKeyed[int, string, string](weir.KeyBy(s, func(string) int { return 0 }),
		weir.KeyedProcessFunc[int, string, string](func(ctx weir.KeyedContext[int], v string, out weir.Collector[string]) error {
			total.Add(1)
			wm := ctx.TimerService().CurrentWatermark()
			if wm > maxWM.Load() {
				maxWM.Store(wm)
			}
			if ctx.Timestamp() <= wm {
				late.Add(1)
			}
			return nil
		})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := env.ExecuteAsync(ctx, "kafka-watermarks")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Wait(ctx); err != nil {
		t.Fatal(err) // the bounded source ends
	}
	if total.Load() != 2*n || late.Load() != 0 {
		t.Fatalf("%d records, %d late (max watermark seen %d), want %d and none late", total.Load(), late.Load(), maxWM.Load(), 2*n)
	}
}

// A running job finds a partition added to its topic and reads it (the
// enumerator's discovery runs on the JobManager through CallAsync).
func TestJobDiscoversNewPartition(t *testing.T) {
	addrs := fakeKafka(t, "grow", 1)
	produceTo(t, addrs, "grow", 0, []string{"old"}, func(int) int64 { return 1 })
	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
	src, err := kafka.NewSource(kafka.SourceConfig{Brokers: addrs, Topics: []string{"grow"}, DiscoveryInterval: 20 * time.Millisecond}, kafka.StringValue())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	weir.Discard(weir.Map(weir.FromSource(env, src, "grow"), func(v string) string {
		mu.Lock()
		seen[v]++
		mu.Unlock()
		return v
	}))
	j, err := env.ExecuteAsync(context.Background(), "kafka-discovery")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { j.Cancel(); <-j.Done() }()
	wait := func(v string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			n := seen[v]
			mu.Unlock()
			if n == 1 {
				return
			}
			if n > 1 || time.Now().After(deadline) {
				t.Fatalf("%q read %d times", v, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("old")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreatePartitions(context.Background(), 2, "grow"); err != nil {
		t.Fatal(err)
	}
	produceTo(t, addrs, "grow", 2, []string{"new"}, func(int) int64 { return 2 })
	wait("new")
}
