package weir.bench;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The keyBy shuffle of scripts/bench-cluster on a standalone cluster: the {@code shuffle} job
 * of bench/flink's FlinkBench (Weir's benchjobs.ShuffleInt64Pairs), generator of (i, 3i+1) ->
 * map -> keyBy(f0) -> filter -> discard over --events records at --parallelism, without
 * checkpoints. Submitted attached, it prints the events its map counted (an accumulator, added
 * once per subtask at close) and the job's net runtime; the CPU is the cluster's processes',
 * which the script measures.
 *
 * <p>ShuffleBench [--events N] [--parallelism P]
 */
public final class ShuffleBench {
  static final String EVENTS = "events";

  public static void main(String[] args) throws Exception {
    long events = 50_000_000L;
    int parallelism = 2;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("ShuffleBench: flag " + args[i] + " needs a value");
      }
      switch (args[i]) {
        case "--events" -> events = Long.parseLong(args[i + 1]);
        case "--parallelism" -> parallelism = Integer.parseInt(args[i + 1]);
        default -> throw new IllegalArgumentException(
            "ShuffleBench: unknown flag " + args[i] + " (takes --events N --parallelism P)");
      }
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(parallelism);
    env.fromSequence(0, events - 1)
        .map(new CountingPairs())
        .returns(Types.TUPLE(Types.LONG, Types.LONG))
        .keyBy(p -> p.f0, Types.LONG)
        .filter(p -> p.f1 % 5 != 0)
        .sinkTo(new DiscardingSink<>());
    JobExecutionResult r = env.execute("bench-shuffle");
    Long counted = r.getAccumulatorResult(EVENTS);
    System.out.println("ShuffleBench: events " + (counted == null ? 0 : counted) + " runtime_ms " + r.getNetRuntime());
  }

  /** (i, 3i+1), counting what passes in a field, added to the accumulator once at close. */
  static final class CountingPairs extends RichMapFunction<Long, Tuple2<Long, Long>> {
    private long seen;

    @Override
    public Tuple2<Long, Long> map(Long i) {
      seen++;
      return Tuple2.of(i, i * 3 + 1);
    }

    @Override
    public void close() {
      getRuntimeContext().addAccumulator(EVENTS, new LongCounter(seen));
    }
  }
}
