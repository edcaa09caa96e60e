package kafkakeyedcount

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/source"
)

// A bounded run stops at the input's end offsets current when it starts,
// also when it resumes from a checkpoint of an unbounded run. The Kafka
// source keeps each split's stop offset in the split (as Flink's does), so
// the splits of such a checkpoint have none (kafka.NoStopOffset) and a
// bounded source alone would read them forever. stopAtStart gives those
// splits the end offsets listed when the run started; splits that have a
// stop offset (fresh ones, or ones restored from a bounded run) keep it.
type stopAtStart[T any] struct {
	*kafka.Source[T]
	topic string
	ends  map[int32]int64 // last stable offset of each partition at start
}

// listEnds lists the last stable offsets (the end for read_committed) of
// topic's partitions.
func listEnds(brokers []string, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka-keyed-count --bounded: listing the end offsets of %q: %w", topic, err)
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	return ends, nil
}

// CreateReader implements source.Source.
func (s *stopAtStart[T]) CreateReader(ctx source.ReaderContext) (source.Reader[T, kafka.Split], error) {
	r, err := s.Source.CreateReader(ctx)
	if err != nil {
		return nil, err
	}
	return &stopAtStartReader[T]{Reader: r, s: s}, nil
}

type stopAtStartReader[T any] struct {
	source.Reader[T, kafka.Split]
	s *stopAtStart[T]
}

// AddSplits implements source.Reader.
func (r *stopAtStartReader[T]) AddSplits(splits []kafka.Split) {
	splits = append([]kafka.Split(nil), splits...)
	for i, sp := range splits {
		if end, ok := r.s.ends[sp.Partition]; ok && sp.Topic == r.s.topic && sp.StopOffset == kafka.NoStopOffset {
			splits[i].StopOffset = max(end, sp.Offset)
		}
	}
	r.Reader.AddSplits(splits)
}
