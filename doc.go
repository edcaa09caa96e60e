// Package weir is the DataStream API of Weir, a distributed stateful stream
// processor in the family of Apache Flink.
//
// A job is an ordinary Go program: it creates an Environment, declares
// sources, transformations and sinks, and calls Execute, which runs the job on
// an embedded local cluster. Because Go methods cannot have type parameters,
// transformations that change the element type are free functions:
//
//	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
//	lines := weir.ReadTextFile(env, "in.txt")
//	words := weir.FlatMap(lines, func(l string, out weir.Collector[string]) { ... })
//	counts := weir.Reduce(weir.KeyBy(pairs, func(p WordCount) string { return p.Word }), add)
//	weir.WriteText(counts, "out.txt", format)
//	_, err := env.Execute(ctx, "wordcount")
//
// Methods on DataStream set properties of the operator that produced it
// (Name, UID, SetParallelism, DisableChaining, WithCodec) or choose how its
// records are partitioned to the next operator (Rebalance, Broadcast, ...).
package weir
