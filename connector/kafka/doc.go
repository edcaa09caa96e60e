// Package kafka reads from and writes to Apache Kafka with franz-go.
//
// The source (NewSource) reads topic partitions as splits of Weir's source
// contract: an enumerator on the JobManager lists the topics, resolves the
// starting offsets and assigns partitions to readers; each reader consumes
// its partitions with a client of its own and keeps the next offset of
// each in checkpoints, so a restore resumes exactly where the checkpoint
// was taken. Offsets are committed to the consumer group when a checkpoint
// completes (for monitoring; the source never reads them back except with
// CommittedOffsets at a fresh start).
//
// The sink (NewSink) writes a stream to one topic with a delivery
// guarantee: None (produce asynchronously), AtLeastOnce (every checkpoint
// waits for Kafka's acknowledgements) or ExactlyOnce (one Kafka
// transaction per subtask and checkpoint, committed when the checkpoint
// completes, so read_committed consumers see each record once). Records
// with a key are partitioned by the murmur2 hash of the key, as Kafka's
// Java client does.
//
// docs/kafka.md is the design record: the protocol, the transactional id
// scheme, what each crash window leads to, and what is left out.
package kafka
