// Package weir is the DataStream API of Weir, a distributed stateful stream
// processor in the family of Apache Flink.
//
// This comment is the map of the API: where to start, then one section per
// topic, each naming the types and functions to read. Most functions have a
// runnable example (go doc shows them; go test runs them), and the examples/
// folder of the repository holds complete programs to copy.
//
// # Start here
//
// A job is an ordinary Go program: it creates an [Environment], declares
// sources, transformations and sinks, and calls [Environment.Execute], which
// runs the job on an embedded local cluster and returns when it ends:
//
//	env := weir.NewEnvironment(weir.Config{Parallelism: 2})
//	lines := weir.FromSlice(env, []string{"to be or", "not to be"})
//	words := weir.FlatMap(lines, func(l string, out weir.Collector[WordCount]) {
//		for _, w := range strings.Fields(l) {
//			out.Collect(WordCount{Word: w, Count: 1})
//		}
//	})
//	counts := weir.Reduce(weir.KeyBy(words, func(c WordCount) string { return c.Word }),
//		func(acc, c WordCount) WordCount { acc.Count += c.Count; return acc })
//	weir.Print(counts)
//	_, err := env.Execute(ctx, "wordcount")
//
// Go methods cannot have type parameters, so every transformation that
// changes the element type (and most that do not) is a function taking the
// stream as its first argument: Flink's stream.map(f) is weir.Map(stream, f).
// go doc lists such functions under the type they return, mostly
// [DataStream]; the sections below list them by the stream they apply to.
// Methods on [DataStream] set properties of the operator that produced it
// ([DataStream.Name], [DataStream.UID], [DataStream.SetParallelism],
// [DataStream.DisableChaining], [DataStream.WithCodec]) or choose how its
// records reach the next operator ([DataStream.Rebalance],
// [DataStream.Broadcast], [DataStream.Forward], [DataStream.Rescale],
// [DataStream.Shuffle], [PartitionCustom]).
//
// Records that cross the network or live in state are encoded by codecs
// ([codec.Codec]), derived once per type; exported struct fields of basic
// types, slices, maps and pointers need nothing. [Config] holds the job's
// settings, each with Flink's name for it.
//
// # Streams and transformations
//
// Sources of a [DataStream]: [FromSlice], [Sequence], [Generate] (bounded or
// unbounded, at a rate), [ReadTextFile], [SocketTextStream], and
// [FromSource] for any [source.Source].
//
// On a [DataStream]: [Map], [Filter], [FlatMap], [Process] (a
// [ProcessFunction], or a plain function as [ProcessFunc]), [Union],
// [KeyBy] and [KeyByWithCodec] (to a [KeyedStream]), [WindowAll],
// [CountWindowAll] and [CountWindowAllSliding] (to an [AllWindowedStream]),
// [Connect] (to [ConnectedStreams]), [BroadcastTo] (to a [BroadcastStream]),
// [Join] (to [JoinedStreams]), [AssignTimestampsAndWatermarks], and the
// sinks below. A function given as a pointer to a struct runs as a shallow
// copy per subtask; it may implement [Opener] (or [KeyedOpener]), [Closer],
// [Finisher], [CheckpointedFunction] and [CheckpointListener] for Flink's
// rich-function lifecycle. [OutputTag] and [SideOutput] give an operator
// more outputs than one.
//
// # Keyed streams and state
//
// [KeyBy] partitions a stream by key into a [KeyedStream]. On it: [Reduce]
// (a running result per key), [ProcessKeyed] (a [KeyedProcessFunction],
// or [KeyedProcessFunc]), [MapWithState] and [FlatMapWithState], [Window]
// and [CountWindow] / [CountWindowSliding] (to a [WindowedStream]),
// [IntervalJoin] (with another KeyedStream), [ConnectKeyed] (to
// [KeyedConnectedStreams], run with [KeyedCoProcess]) and
// [ConnectBroadcast].
//
// Keyed state lives in package state and is always the current key's:
// [state.ValueState], [state.ListState], [state.MapState],
// [state.ReducingState] and [state.AggregatingState], declared by a
// descriptor ([state.ValueDescriptor], ...) and got from
// [KeyedContext.State] or, in Open, [KeyedRuntimeContext.State]; each can
// expire with a [state.TTLConfig]. Non-keyed functions keep operator state
// ([state.GetOperatorListState], [state.GetUnionListState]) from
// [RuntimeContext.OperatorState]. [Config.StateBackend] chooses where keyed
// state lives: "hashmap" (Go maps) or "pebble" (on disk, larger than memory).
//
// # Timers
//
// A keyed process function registers timers for the current key through
// [KeyedContext.TimerService] ([TimerService]: event time or processing
// time) and handles them by implementing [TimerFunction]: its OnTimer gets
// an [OnTimerContext] with the key and [TimeDomain]. Timers are per key and
// time, checkpointed with the keyed state, and fire in time order. The
// same holds for [KeyedCoProcessFunction] and
// [KeyedBroadcastProcessFunction]. Non-keyed functions have no timers, as
// in Flink.
//
// # Event time and watermarks
//
// [AssignTimestampsAndWatermarks] gives elements their event time and
// emits watermarks per a [WatermarkStrategy]: bounded out-of-orderness by
// default, a custom [WatermarkGenerator], or [PunctuatedWatermarks] (a
// watermark after every element that advances it, so results depend only
// on the input's order: what tests want). [FromSourceWithWatermarks] does
// it per split inside a source; [WatermarkStrategy.IdleTimeout] keeps an
// idle input from holding event time back, and
// [WatermarkStrategy.WithWatermarkAlignment] keeps sources within a drift
// of each other. At the end of a bounded input a final watermark fires
// every event-time timer and window still pending.
//
// # Windows and late data
//
// [Window] cuts a [KeyedStream] into windows by a [WindowAssigner]:
// [TumblingEventTimeWindows], [SlidingEventTimeWindows],
// [EventTimeSessionWindows], [DynamicEventTimeSessionWindows],
// their processing-time counterparts and [GlobalWindows]; [CountWindow]
// by element count. On the [WindowedStream]: [WindowReduce],
// [WindowAggregate] (an [AggregateFunction]), [WindowProcess] (a
// [ProcessWindowFunction] that sees all elements and the [WindowContext]),
// and [WindowReduceProcess] / [WindowAggregateProcess] which combine both.
// [WindowedStream.Trigger], [WindowedStream.Evictor] replace when a window
// fires ([Trigger], [CountTrigger], [ContinuousEventTimeTrigger],
// [PurgingTrigger], ...) and what it keeps ([Evictor]).
// [WindowedStream.AllowedLateness] fires a window again for elements up to
// that late; [WindowedStream.SideOutputLateData] sends later ones to a side
// output, read with [SideOutput]. Non-keyed windows: [WindowAll] with
// [WindowAllReduce], [WindowAllAggregate], [WindowAllProcess].
//
// # Joins
//
// [IntervalJoin] joins two [KeyedStream]s on key and time: each left
// element with the right elements within [IntervalJoinBuilder.Between] of
// it, run with [ProcessIntervalJoin]. [Join] joins two streams within the
// same window ([JoinedStreams.Window], then [WindowJoin] per pair or
// [WindowCoGroup] per window). For joins by hand (an enrichment, a
// match whichever side comes first), [ConnectKeyed] and [KeyedCoProcess]
// share keyed state between the two inputs; [Connect] with [CoMap],
// [CoFlatMap] or [CoProcess] connects non-keyed streams.
//
// # Broadcast
//
// Flink's broadcast state pattern: [BroadcastTo] sends a stream (rules,
// configuration) to every subtask, and [ConnectBroadcast] connects it with a
// [KeyedStream] for a [KeyedBroadcastProcessFunction]. The broadcast side
// writes [state.BroadcastState] (through [BroadcastContext]), the same way
// on every subtask; the keyed side reads it (through
// [KeyedBroadcastContext]) next to its keyed state and timers.
//
// # Sources, sinks and exactly-once
//
// Any source is a [source.Source]: an enumerator that finds splits and a
// reader per subtask whose positions are checkpointed, so reading resumes
// exactly where the last checkpoint was (connectors under connector/, Kafka
// included). Sinks: [Print], [WriteText], [WriteFiles] (exactly once),
// [Discard], [Collect], [SinkTo] for any [sink.Sink] (at least once after a
// failure) and [SinkToCommitting] for a [sink.TwoPhaseCommitting] sink,
// whose output is committed when the checkpoint covering it completes:
// exactly once, with a committer that is idempotent.
//
// # Checkpoints and savepoints
//
// [Config.Checkpointing] ([CheckpointConfig]) turns checkpoints on: every
// Interval the sources inject barriers, every operator snapshots its state
// and two-phase-commit sinks pre-commit; after a failure the job restarts
// ([Config.Restart]) from the last complete checkpoint. [Config.ResumeFrom]
// starts a job from a checkpoint or a savepoint ("latest" or a path), at
// any parallelism up to [Config.MaxParallelism]; state is matched to
// operators by [DataStream.UID], so give stateful operators one.
// [Config.OnCheckpoint] and [CheckpointListener] tell when a checkpoint
// completes. Savepoints are taken from a running job with the weir CLI or
// the REST API (below).
//
// # Testing with Collect
//
// [Collect] and [ExecuteAndCollect] bring a job's output back into the
// program: bounded sources ([FromSlice], [Sequence]) in, Collect out, and a
// test compares. Several [Collected] sinks of one job may be read in any
// order, during or after [Environment.Execute]: each holds up to
// [Collected.MaxUnread] elements for its reader. Order is kept per
// subtask, so run at parallelism 1 or sort the results; event time with
// [PunctuatedWatermarks] makes windows and timers depend only on the input.
// [Environment.ExecuteAsync] returns a [Job] to wait for or cancel.
//
// # Running with the weir CLI
//
// A job built with this package is its own program: it runs on the
// embedded cluster when it calls Execute, with its settings in [Config]
// (which Flink's names map to). With [Config.RESTAddr] set it serves
// Flink's REST API, and the weir command talks to it: weir list, weir
// cancel, weir savepoint (take a savepoint), weir stop (stop with a final
// savepoint); resume the program from it with [Config.ResumeFrom]. weir
// run starts Weir's built-in jobs; weir help says more.
package weir
