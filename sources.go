package weir

import (
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/socket"
	"github.com/weirhq/weir/internal/operator"
)

// SourceReader reads one subtask's share of a source; see FromSource.
type SourceReader[T any] = operator.SourceReader[T]

// Source is anything that can create a reader per subtask.
type Source[T any] interface {
	NewReader() SourceReader[T]
}

// FromSource adds a source to the job.
func FromSource[T any](env *Environment, src Source[T], name string) DataStream[T] {
	fac := operator.NewSourceFactory(src.NewReader)
	n := addNode[T](env, "Source: "+name, fac, false)
	n.IsSource = true
	return newStream[T](env, n)
}

// FromSlice emits the elements of items, in order. Like Flink's fromData it
// runs at parallelism 1.
func FromSlice[T any](env *Environment, items []T) DataStream[T] {
	return FromSource[T](env, datagen.Slice[T]{Items: items}, "Slice").SetParallelism(1)
}

// Sequence emits the numbers from..to (inclusive), split among subtasks.
func Sequence(env *Environment, from, to int64) DataStream[int64] {
	return FromSource[int64](env, datagen.Sequence{From: from, To: to}, "Sequence")
}

// Generate emits fn(i) for i in [0, count) (count < 0: forever), split among
// subtasks. ratePerSecond > 0 limits the source's total rate; 0 and +Inf mean
// no limit; a negative or NaN rate fails the job when it opens.
func Generate[T any](env *Environment, count int64, ratePerSecond float64, fn func(i int64) T) DataStream[T] {
	return FromSource[T](env, datagen.Generator[T]{Count: count, Fn: fn, RatePerSecond: ratePerSecond}, "Generator")
}

// ReadTextFile emits the lines of a file, or of all files in a directory.
// Large inputs are split among the source's subtasks.
func ReadTextFile(env *Environment, path string) DataStream[string] {
	return FromSource[string](env, file.TextSource{Path: path}, path)
}

// SocketTextStream emits the lines received from a TCP server at address
// (host:port), until the server closes the connection. It runs at parallelism 1.
func SocketTextStream(env *Environment, address string) DataStream[string] {
	return FromSource[string](env, socket.TextSource{Address: address}, "Socket "+address).SetParallelism(1)
}
