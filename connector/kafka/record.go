package kafka

// Record is one consumed Kafka record, as deserializers see it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp int64 // ms
	Headers   []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}
