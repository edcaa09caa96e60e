// Package socket reads lines of text from a TCP server, like Flink's
// socketTextStream. TextSource implements source.Source with one split,
// the connection, read by subtask 0 (other subtasks end at once); it ends
// when the server closes the connection.
//
// The source is not replayable: a checkpoint holds the split but no
// position, so a job restored from a checkpoint connects again and reads
// what the server sends from then on. Records the failed attempt read after
// the checkpoint are not read again; use it for demos and tests, not where
// every record counts.
package socket
