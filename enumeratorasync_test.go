package weir_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/codec"
	"github.com/weirhq/weir/source"
)

// asyncSource's enumerator runs periodic work through source.AsyncCaller:
// fn counts its calls off the enumerator's goroutine, the handler assigns
// the count as a split (on the enumerator's goroutine) and fails at failAt.
type asyncSource struct {
	calls  *atomic.Int64
	failAt int64
}

func (asyncSource) Boundedness() source.Boundedness { return source.Unbounded }
func (asyncSource) SplitCodec() codec.Codec[int64]  { return codec.Int64() }
func (s asyncSource) CreateEnumerator(ctx source.EnumeratorContext[int64], _ []byte) (source.Enumerator[int64], error) {
	return &asyncEnum{src: s, ctx: ctx}, nil
}
func (asyncSource) CreateReader(source.ReaderContext) (source.Reader[int64, int64], error) {
	return &asyncReader{}, nil
}

type asyncEnum struct {
	src asyncSource
	ctx source.EnumeratorContext[int64]
}

func (e *asyncEnum) Start() error {
	a, ok := e.ctx.(source.AsyncCaller)
	if !ok {
		return errors.New("the engine's EnumeratorContext is no source.AsyncCaller")
	}
	a.CallAsync(func() (any, error) { return e.src.calls.Add(1), nil }, func(v any, err error) error {
		n := v.(int64)
		if n >= e.src.failAt {
			return errors.New("periodic work failed on purpose")
		}
		e.ctx.Assign(0, n)
		return nil
	}, 0, 5*time.Millisecond)
	return nil
}
func (e *asyncEnum) AddReader(int) error            { return nil }
func (e *asyncEnum) HandleSplitRequest(int) error   { return nil }
func (e *asyncEnum) Snapshot(int64) ([]byte, error) { return nil, nil }
func (e *asyncEnum) Close() error                   { return nil }

type asyncReader struct{ got []int64 }

func (r *asyncReader) Start() error                         { return nil }
func (r *asyncReader) AddSplits(s []int64)                  { r.got = append(r.got, s...) }
func (r *asyncReader) NoMoreSplits()                        {}
func (r *asyncReader) NotifyCheckpointComplete(int64) error { return nil }
func (r *asyncReader) Close() error                         { return nil }
func (r *asyncReader) SnapshotState(int64) ([]int64, error) { return nil, nil }
func (r *asyncReader) PollNext(out source.Output[int64]) (source.Status, <-chan struct{}, time.Duration, error) {
	for _, v := range r.got {
		out.Collect(v)
	}
	r.got = nil
	return source.NothingAvailable, nil, time.Millisecond, nil
}

// The JobManager runs an enumerator's CallAsync work periodically, hands
// the results to the handler where the enumerator's methods run (its
// assignments reach the reader), fails the job with the handler's error,
// and stops calling once the job ended.
func TestEnumeratorCallAsync(t *testing.T) {
	var calls atomic.Int64
	var collected atomic.Int64
	env := weir.NewEnvironment(weir.Config{Parallelism: 1, Restart: map[string]string{"restart-strategy.type": "none"}})
	weir.Discard(weir.Map(weir.FromSource[int64, int64](env, asyncSource{calls: &calls, failAt: 6}, "async"), func(v int64) int64 {
		collected.Add(1)
		return v
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j, err := env.ExecuteAsync(ctx, "call-async")
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "periodic work failed on purpose") {
		t.Fatalf("the job ended with %v, want the handler's error", err)
	}
	if collected.Load() == 0 {
		t.Fatal("no assignment made by a handler reached the reader")
	}
	n := calls.Load()
	time.Sleep(50 * time.Millisecond)
	if calls.Load() != n {
		t.Fatalf("the work was called %d more times after the job ended", calls.Load()-n)
	}
}
