// Package kafkakeyedcount is the built-in job kafka-keyed-count: the
// keyed-count job (jobs/keyedcount) between Kafka topics. It reads records
// whose value is the text "key<TAB>value" (value an int64) from an input
// topic with read_committed, keys them by key, keeps each key's running
// count n and sum in keyed state, and writes, for each record, the record
// "key<TAB>n<TAB>sum" (Kafka record key: the key) to an output topic.
//
// With the exactly-once guarantee the output of each checkpoint is one
// Kafka transaction per sink subtask, committed when the checkpoint
// completes, and the input offsets are part of the checkpoint: after any
// number of failures and restarts (in the process, or of the process with
// --from latest), a read_committed consumer of the output sees, for every
// key, exactly n = 1..N once each, with the right sums. With at-least-once
// nothing is lost but records written after the last completed checkpoint
// are written again after a restore.
//
// A record whose value is not "key<TAB>value" is a bad record, handled by
// the Parse operator after the source with Options.BadRecords
// (jobs/badrecords): by default the job fails at once, permanently, naming
// its topic, partition and offset; skip drops it; dead-letter writes it to
// Options.DeadLetterTopic through a Kafka sink with the output's guarantee.
// Both count it in Parse.numBadRecords. A record whose value is blank is
// skipped.
package kafkakeyedcount
