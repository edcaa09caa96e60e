package kafkakeyedcount

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/connector/kafka"
	"github.com/weirhq/weir/source"
)

// continuable wraps the Kafka source so that a run can go on from any
// earlier run's checkpoint, bounded or not, and a bounded run reads up to
// the input's end offsets current when it starts:
//
//   - The Kafka source keeps a split's stop offset in the split (as Flink's
//     does), so the splits of an unbounded run's checkpoint have none
//     (kafka.NoStopOffset), and a bounded source alone would read them
//     forever. In a bounded run every split gets the end offset of its
//     partition listed at start (at least its position).
//   - The source drops a bounded split from its state once it is read to
//     its stop offset, so the final checkpoint of a bounded run would hold
//     none of its partitions, and a run resumed from it would never read
//     them again. The wrapper keeps them in the state, finished (position =
//     stop offset); an unbounded run clears their stop offset and reads on.
type continuable[T any] struct {
	*kafka.Source[T]
	topic string
	ends  map[int32]int64 // bounded: each partition's last stable offset at start; nil: unbounded
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
func (s *continuable[T]) CreateReader(ctx source.ReaderContext) (source.Reader[T, kafka.Split], error) {
	r, err := s.Source.CreateReader(ctx)
	if err != nil {
		return nil, err
	}
	return &continuableReader[T]{Reader: r, s: s, given: map[string]kafka.Split{}}, nil
}

type continuableReader[T any] struct {
	source.Reader[T, kafka.Split]
	s     *continuable[T]
	given map[string]kafka.Split // the splits handed to the reader, by topic-partition
}

func splitKey(sp kafka.Split) string { return sp.Topic + "-" + strconv.Itoa(int(sp.Partition)) }

// AddSplits implements source.Reader.
func (r *continuableReader[T]) AddSplits(splits []kafka.Split) {
	splits = slices.Clone(splits)
	for i, sp := range splits {
		if r.s.ends == nil {
			splits[i].StopOffset = kafka.NoStopOffset
		} else if end, ok := r.s.ends[sp.Partition]; ok && sp.Topic == r.s.topic {
			splits[i].StopOffset = max(end, sp.Offset)
		}
		r.given[splitKey(splits[i])] = splits[i]
	}
	r.Reader.AddSplits(splits)
}

// SnapshotState implements source.Reader: the reader's splits, and the
// bounded ones it finished and dropped, at their stop offsets.
func (r *continuableReader[T]) SnapshotState(id int64) ([]kafka.Split, error) {
	out, err := r.Reader.SnapshotState(id)
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for _, sp := range out {
		held[splitKey(sp)] = true
	}
	for _, k := range slices.Sorted(maps.Keys(r.given)) {
		if sp := r.given[k]; !held[k] && sp.StopOffset != kafka.NoStopOffset {
			out = append(out, kafka.Split{Topic: sp.Topic, Partition: sp.Partition, Offset: sp.StopOffset, StopOffset: sp.StopOffset})
		}
	}
	return out, nil
}
