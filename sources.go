package weir

import (
	"github.com/weirhq/weir/connector/datagen"
	"github.com/weirhq/weir/connector/file"
	"github.com/weirhq/weir/connector/socket"
	"github.com/weirhq/weir/internal/operator"
	"github.com/weirhq/weir/source"
)

// FromSource adds a source (see package source: an enumerator of splits on
// the JobManager, a reader per subtask) to the job. Go cannot infer the
// split type from the source, so name both: FromSource[T, S](env, src, name).
func FromSource[T, S any](env *Environment, src source.Source[T, S], name string) DataStream[T] {
	fac, coord := operator.NewSourceFactory(src)
	n := addNode[T](env, "Source: "+name, fac, false)
	n.IsSource = true
	n.Coordinator = coord
	return newStream[T](env, n)
}

// FromSlice emits the elements of items, in order. Like Flink's fromData it
// runs at parallelism 1.
func FromSlice[T any](env *Environment, items []T) DataStream[T] {
	return FromSource[T, datagen.Split](env, datagen.Slice[T]{Items: items}, "Slice").SetParallelism(1)
}

// Sequence emits the numbers from..to (inclusive), split among subtasks.
func Sequence(env *Environment, from, to int64) DataStream[int64] {
	return FromSource[int64, datagen.Split](env, datagen.Sequence{From: from, To: to}, "Sequence")
}

// Generate emits fn(i) for i in [0, count) (count < 0: forever), split among
// subtasks. ratePerSecond > 0 limits the source's total rate; 0 and +Inf mean
// no limit; a negative or NaN rate fails the job when it opens. Positions
// are checkpointed: after a restore it goes on from where it was.
func Generate[T any](env *Environment, count int64, ratePerSecond float64, fn func(i int64) T) DataStream[T] {
	return FromSource[T, datagen.Split](env, datagen.Generator[T]{Count: count, Fn: fn, RatePerSecond: ratePerSecond}, "Generator")
}

// ReadTextFile emits the lines of a file, or of all files in a directory
// (names starting with . or _ are skipped), or of standard input ("-").
// Large inputs are split among the source's subtasks; positions are
// checkpointed (standard input and pipes cannot be replayed).
func ReadTextFile(env *Environment, path string) DataStream[string] {
	return FromSource[string, file.Split](env, file.TextSource{Path: path}, path)
}

// SocketTextStream emits the lines received from a TCP server at address
// (host:port), until the server closes the connection. It runs at
// parallelism 1 and is not replayable: after a restore it reads what the
// server sends from then on.
func SocketTextStream(env *Environment, address string) DataStream[string] {
	return FromSource[string, socket.Split](env, socket.TextSource{Address: address}, "Socket "+address).SetParallelism(1)
}
