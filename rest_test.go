package weir_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/weirhq/weir/internal/protocol"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/internal/cli"
	"github.com/weirhq/weir/internal/rest"
	"go.uber.org/goleak"
)

// A running job is visible through the REST API and the CLI, and can be
// canceled through them.
func TestRESTAndCLIAgainstRunningJob(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	src := weir.Generate(env, -1, 2000, func(i int64) int64 { return i })
	weir.Discard(weir.Map(src.Rebalance(), func(v int64) int64 { return v }).Name("Identity"))
	job, err := env.ExecuteAsync(context.Background(), "visible")
	if err != nil {
		t.Fatal(err)
	}
	addr := job.RESTAddr()
	c := rest.NewClient(addr, nil)
	ctx := context.Background()

	var d rest.JobDetails
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err = c.Job(ctx, job.ID())
		if err != nil {
			t.Fatal(err)
		}
		// Each task publishes its counters every 50 ms, so the two
		// vertices' counts show up at slightly different moments.
		if d.State == protocol.JobRunning && len(d.Vertices) == 2 && d.Vertices[1].Metrics.ReadRecords > 0 && d.Vertices[0].Metrics.WriteRecords > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job never showed running vertices with records: %+v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d.Name != "visible" || d.Vertices[0].Parallelism != 2 || d.Vertices[1].Name != "Identity -> Sink: Discard" {
		t.Fatalf("unexpected job details: %+v", d)
	}
	ov, err := c.Overview(ctx)
	if err != nil || ov.JobsRunning != 1 || ov.SlotsTotal != 2 || ov.TaskManagers != 1 {
		t.Fatalf("overview %+v, %v", ov, err)
	}

	var out, errOut bytes.Buffer
	if code := cli.Main([]string{"list", "--address", addr}, &out, &errOut); code != 0 || !bytes.Contains(out.Bytes(), []byte(job.ID())) || !bytes.Contains(out.Bytes(), []byte("RUNNING")) {
		t.Fatalf("weir list: code %d, out %q, err %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := cli.Main([]string{"cancel", job.ID(), "--address", addr}, &out, &errOut); code != 0 {
		t.Fatalf("weir cancel: code %d, err %q", code, errOut.String())
	}
	_, err = job.Wait(ctx)
	if !errors.Is(err, weir.ErrCanceled) {
		t.Fatalf("after cancel, Wait returned %v", err)
	}
	if code := cli.Main([]string{"list", "--address", addr}, &out, &errOut); code != 1 || !bytes.Contains(errOut.Bytes(), []byte("no Weir cluster answered")) {
		t.Fatalf("list after shutdown: code %d, err %q", code, errOut.String())
	}
}

// closeBlocker fails on subtask 0 and blocks in Close on subtask 1 until
// released, which holds the job in FAILING so the REST API can be read.
type closeBlocker struct {
	release chan struct{}
	opened1 chan struct{} // closed when subtask 1 is open, so it is there to block
	subtask int
}

func (c *closeBlocker) Open(ctx weir.RuntimeContext) error {
	c.subtask = ctx.Subtask()
	if c.subtask == 1 {
		close(c.opened1)
	}
	return nil
}
func (c *closeBlocker) Close() error {
	if c.subtask == 1 {
		<-c.release
	}
	return nil
}
func (c *closeBlocker) ProcessElement(ctx weir.Context, v int64, out weir.Collector[int64]) error {
	if c.subtask == 0 {
		<-c.opened1
		return errors.New("row is broken")
	}
	return nil
}

func TestRESTShowsFailure(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	release := make(chan struct{})
	src := weir.Generate(env, -1, 100, func(i int64) int64 { return i })
	weir.Discard(weir.Process[int64, int64](src, &closeBlocker{release: release, opened1: make(chan struct{})}).Name("Breaks"))
	job, err := env.ExecuteAsync(context.Background(), "fails")
	if err != nil {
		t.Fatal(err)
	}
	c := rest.NewClient(job.RESTAddr(), nil)
	for {
		ex, err := c.Exceptions(context.Background(), job.ID())
		if err != nil {
			t.Fatal(err)
		}
		if ex.RootException != "" {
			if !bytes.Contains([]byte(ex.RootException), []byte("row is broken")) || !bytes.Contains([]byte(ex.AllExceptions[0].Task), []byte("(1/2)")) {
				t.Fatalf("exceptions %+v", ex)
			}
			if e := ex.ExceptionHistory.Entries; len(e) != 1 || e[0].ExceptionName != "operator failure" {
				t.Fatalf("exception history %+v", ex.ExceptionHistory)
			}
			d, err := c.Job(context.Background(), job.ID())
			if err != nil || d.State != protocol.JobFailing {
				t.Fatalf("job state %s, %v; want FAILING while a subtask is still closing", d.State, err)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if _, err := job.Wait(context.Background()); err == nil {
		t.Fatal("want failure")
	}
}

// /jobs/{id}/vertices/{vid}/watermarks shows each subtask's input and
// output watermark while the job runs, as Flink's metrics name them.
func TestRESTWatermarks(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSignalRouter)
	env := weir.NewEnvironment(weir.Config{Parallelism: 2, RESTAddr: "127.0.0.1:0"})
	src := weir.AssignTimestampsAndWatermarks(weir.Generate(env, -1, 5000, func(i int64) int64 { return i }),
		weir.WatermarkStrategy[int64]{Timestamp: func(v int64) int64 { return 1_000_000 + v }, Interval: 10 * time.Millisecond})
	weir.Discard(weir.Map(src.Rebalance(), func(v int64) int64 { return v }))
	job, err := env.ExecuteAsync(context.Background(), "watermarks")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { job.Cancel(); job.Wait(context.Background()) }()
	c := rest.NewClient(job.RESTAddr(), nil)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := c.Job(ctx, job.ID())
		if err != nil {
			t.Fatal(err)
		}
		var in, out []rest.Metric
		if len(d.Vertices) == 2 {
			if out, err = c.Watermarks(ctx, job.ID(), d.Vertices[0].ID); err != nil {
				t.Fatal(err)
			}
			if in, err = c.Watermarks(ctx, job.ID(), d.Vertices[1].ID); err != nil {
				t.Fatal(err)
			}
		}
		// Two subtasks, three metrics each (the two watermarks and the
		// output's status); the source vertex's output and
		// the map's input watermarks advance past the first timestamp.
		advanced := func(ms []rest.Metric, name string) bool {
			n := 0
			for _, m := range ms {
				if strings.HasSuffix(m.ID, "."+name) {
					if v, err := strconv.ParseInt(m.Value, 10, 64); err == nil && v >= 1_000_000 {
						n++
					}
				}
			}
			return len(ms) == 6 && n == 2
		}
		if advanced(out, "currentOutputWatermark") && advanced(in, "currentInputWatermark") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watermarks never advanced: source %v, map %v", out, in)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.Watermarks(ctx, job.ID(), "no-such-vertex"); err == nil {
		t.Fatal("an unknown vertex must answer 404")
	}
}
