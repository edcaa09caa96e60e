// Package badrecords is the policy the built-in jobs share for input they
// cannot parse: Fail (the default) ends the job at once with an error
// naming the file and line (or topic, partition and offset) and what is
// wrong, marked permanent (failure.Permanent) since a restart would read the
// same record again; Skip drops the record; DeadLetter writes it, with where
// it came from and why it was bad, to a dead-letter output. Skipped and
// dead-lettered records are counted in the parsing operator's metric
// numBadRecords (MetricName).
//
// Blank lines (empty, or only whitespace) are not bad records: every job
// skips them without counting. A UTF-8 byte order mark at the start of a
// file is stripped by the file source (connector/file), not here.
package badrecords
