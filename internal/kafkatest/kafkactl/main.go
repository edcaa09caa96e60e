// Command kafkactl is the small Kafka client of the kafka-keyed-count demo
// and of manual checks against the test broker, so that no Kafka command
// line tools are needed (scripts/kafka-broker runs only the broker):
//
//	go run ./internal/kafkatest/kafkactl [--brokers H:P] create-topic NAME [--partitions N]
//	go run ./internal/kafkatest/kafkactl [--brokers H:P] produce TOPIC [--keyed] < lines
//	go run ./internal/kafkatest/kafkactl [--brokers H:P] consume TOPIC [--uncommitted]
//	go run ./internal/kafkatest/kafkactl [--brokers H:P] lag TOPIC --group G
//
// produce writes each line of standard input as a record value (--keyed:
// with the text before the line's first TAB as the record key, so one key's
// records go to one partition, in order). consume prints the values of
// every record from the start up to the end as it is when called: with
// read_committed (the default) up to the last stable offsets, after waiting
// up to 30 s for open transactions to end; --uncommitted reads everything
// up to the high watermarks. lag prints, per partition of TOPIC, the
// offset group G committed (a Weir Kafka source commits at every completed
// checkpoint), the end offset and the difference, as Kafka's
// kafka-consumer-groups --describe does. --brokers defaults to 127.0.0.1:9092 (or
// WEIR_KAFKA_BROKERS).
package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirhq/weir/internal/kafkatest"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kafkactl:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("kafkactl", flag.ContinueOnError)
	def := os.Getenv(kafkatest.EnvBrokers)
	if def == "" {
		def = "127.0.0.1:9092"
	}
	brokers := fs.String("brokers", def, "bootstrap brokers host:port[,host:port]")
	partitions := fs.Int("partitions", 1, "create-topic: number of partitions")
	keyed := fs.Bool("keyed", false, "produce: the text before a line's first TAB is the record key")
	uncommitted := fs.Bool("uncommitted", false, "consume: read_uncommitted instead of read_committed")
	group := fs.String("group", "", "lag: the consumer group")
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 2 {
		return fmt.Errorf("usage: kafkactl [--brokers H:P] create-topic NAME [--partitions N] | produce TOPIC [--keyed] | consume TOPIC [--uncommitted] | lag TOPIC --group G")
	}
	cmd, topic := pos[0], pos[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch cmd {
	case "create-topic":
		if *partitions < 1 {
			return fmt.Errorf("--partitions must be at least 1, got %d", *partitions)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkatest.Seeds(*brokers)...))
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := kafkatest.CreateTopicContext(ctx, cl, topic, *partitions); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "kafkactl: created topic %s with %d partitions\n", topic, *partitions)
	case "produce":
		cl, err := kgo.NewClient(kgo.SeedBrokers(kafkatest.Seeds(*brokers)...), kgo.DefaultProduceTopic(topic))
		if err != nil {
			return err
		}
		defer cl.Close()
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var batch []*kgo.Record
		n := 0
		flush := func() error {
			// Each batch gets the command's bound, not the whole input
			// (a large input may take longer).
			bctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err := cl.ProduceSync(bctx, batch...).FirstErr()
			n += len(batch)
			batch = batch[:0]
			return err
		}
		for sc.Scan() {
			r := &kgo.Record{Value: []byte(sc.Text())}
			if k, _, ok := strings.Cut(sc.Text(), "\t"); ok && *keyed {
				r.Key = []byte(k)
			}
			if batch = append(batch, r); len(batch) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "kafkactl: produced %d records to %s\n", n, topic)
	case "consume":
		if !*uncommitted {
			cl, err := kgo.NewClient(kgo.SeedBrokers(kafkatest.Seeds(*brokers)...))
			if err != nil {
				return err
			}
			settle, cancelSettle := context.WithTimeout(ctx, kafkatest.SettleLimit)
			err = kafkatest.WaitSettled(settle, cl, topic)
			cancelSettle()
			cl.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "kafkactl: %v; reading up to the last stable offsets\n", err)
			}
		}
		recs, err := kafkatest.Read(ctx, *brokers, topic, !*uncommitted)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(os.Stdout)
		for _, r := range recs {
			w.Write(r.Value)
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			return err
		}
	case "lag":
		if *group == "" {
			return fmt.Errorf("lag needs --group")
		}
		return printLag(ctx, *brokers, *group, topic)
	default:
		return fmt.Errorf("unknown command %q: want create-topic, produce, consume or lag", cmd)
	}
	return nil
}

// printLag prints group's committed offset, the end offset and the lag of
// each partition of topic, and the total lag.
func printLag(ctx context.Context, brokers, group, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkatest.Seeds(brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("listing the end offsets of %s: %w", topic, err)
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		return fmt.Errorf("fetching the offsets of group %s: %w", group, err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "partition\tcommitted\tend\tlag\t")
	var total int64
	var parts []kadm.ListedOffset
	ends.Each(func(o kadm.ListedOffset) { parts = append(parts, o) })
	slices.SortFunc(parts, func(a, b kadm.ListedOffset) int { return cmp.Compare(a.Partition, b.Partition) })
	for _, e := range parts {
		c, ok := committed.Lookup(topic, e.Partition)
		at := int64(0) // nothing committed: the whole partition is behind
		shown := "-"
		if ok && c.Err == nil && c.At >= 0 {
			at, shown = c.At, strconv.FormatInt(c.At, 10)
		}
		lag := max(e.Offset-at, 0)
		total += lag
		fmt.Fprintf(w, "%d\t%s\t%d\t%d\t\n", e.Partition, shown, e.Offset, lag)
	}
	fmt.Fprintf(w, "total\t\t\t%d\t\n", total)
	return w.Flush()
}
