package kafka

// Serializer turns a value into a record's key and value; a nil key leaves
// partitioning to the default partitioner, else records are partitioned by
// key (murmur2 of the key, as Kafka's Java client does).
type Serializer[T any] func(v T) (key, value []byte, err error)
