package kafka

import "strconv"

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

// ValueExcerpt is how error messages about a bad record show its value:
// quoted, cut after 64 bytes (with "..." after the quote). The source's
// own bad-record errors use it, and jobs that reject records in their own
// operators can show them the same way.
func ValueExcerpt(v []byte) string {
	const max = 64
	if len(v) > max {
		return strconv.Quote(string(v[:max])) + "..."
	}
	return strconv.Quote(string(v))
}
