// Package socket reads lines of text from a TCP server, like Flink's
// socketTextStream. The source runs at parallelism 1 and ends when the server
// closes the connection.
package socket
