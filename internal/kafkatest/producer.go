package kafkatest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer writes keyed-count input, "key<TAB>value" records, to a topic
// until finished, each with its key as the Kafka record key, so that one
// key's records are in one partition, in the order written: each key's
// running counts and sums are then determined by what was written, the
// model a job's output is compared with.
type Producer struct {
	stop  chan struct{}
	done  chan struct{}
	model map[string][]int64 // each key's values in the order written (acknowledged)
	count atomic.Int64       // records acknowledged
	err   error
}

// StartProducer starts writing batches of 1-40 records over keys keys to
// topic, with 5-25 ms between batches, drawn from r. The test's cleanup
// stops it.
func StartProducer(t testing.TB, brokers, topic string, r *rand.Rand, keys int) *Producer {
	t.Helper()
	cl := Client(t, brokers, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	p := &Producer{stop: make(chan struct{}), done: make(chan struct{}), model: map[string][]int64{}}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			batch := make([]*kgo.Record, 1+r.IntN(40))
			vals := make([]int64, len(batch))
			for i := range batch {
				k := fmt.Sprintf("k%03d", r.IntN(keys))
				vals[i] = int64(r.IntN(2001) - 1000)
				batch[i] = &kgo.Record{Key: []byte(k), Value: []byte(k + "\t" + strconv.FormatInt(vals[i], 10))}
			}
			ctx, cancel := context.WithTimeout(context.Background(), OpLimit)
			err := cl.ProduceSync(ctx, batch...).FirstErr()
			cancel()
			if err != nil {
				p.err = fmt.Errorf("producing input: %v", err)
				return
			}
			for i, rec := range batch {
				k := string(rec.Key)
				p.model[k] = append(p.model[k], vals[i])
			}
			p.count.Add(int64(len(batch)))
			time.Sleep(time.Duration(5+r.IntN(20)) * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.stop:
		default:
			close(p.stop)
		}
		<-p.done
	})
	return p
}

// Count is the number of records acknowledged so far.
func (p *Producer) Count() int64 { return p.count.Load() }

// Finish stops the producer and returns the model: each key's values in
// the order written. It fails the test if producing failed.
func (p *Producer) Finish(t testing.TB) map[string][]int64 {
	t.Helper()
	close(p.stop)
	<-p.done
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.model
}
