package weir.bench;

import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The Flink twin of Weir's keyed-count for the failover benchmark (scripts/bench-failover):
 * a source of (i mod keys, i) at a fixed total rate, keyBy the key, a running count and sum
 * per key in one ValueState (the job's only state: keys entries of two longs), the result
 * (key, n, sum) discarded. Checkpoints every --checkpoint-interval ms to --checkpoint-dir on
 * the heap state backend; restarts under fixed-delay with --restart-delay ms.
 *
 * <p>FailoverCount --checkpoint-dir URI [--rate N] [--keys K] [--parallelism P]
 * [--checkpoint-interval MS] [--restart-delay MS]
 */
public final class FailoverCount {
  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("FailoverCount: expected --flag value, got " + args[i]);
      }
      a.put(args[i].substring(2), args[i + 1]);
    }
    String dir = a.get("checkpoint-dir");
    if (dir == null) {
      throw new IllegalArgumentException("FailoverCount: --checkpoint-dir URI is required");
    }
    long rate = Long.parseLong(a.getOrDefault("rate", "2000"));
    long keys = Long.parseLong(a.getOrDefault("keys", "1000"));
    int parallelism = Integer.parseInt(a.getOrDefault("parallelism", "2"));

    Map<String, String> conf = new HashMap<>();
    conf.put("execution.checkpointing.interval", a.getOrDefault("checkpoint-interval", "1000") + " ms");
    conf.put("execution.checkpointing.dir", dir);
    conf.put("state.backend.type", "hashmap");
    conf.put("restart-strategy.type", "fixed-delay");
    conf.put("restart-strategy.fixed-delay.attempts", "1000");
    conf.put("restart-strategy.fixed-delay.delay", a.getOrDefault("restart-delay", "100") + " ms");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.configure(Configuration.fromMap(conf));
    env.setParallelism(parallelism);

    final long k = keys;
    DataGeneratorSource<Long> source =
        new DataGeneratorSource<>(
            (GeneratorFunction<Long, Long>) i -> i,
            Long.MAX_VALUE,
            RateLimiterStrategy.perSecond(rate),
            Types.LONG);
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "generator")
        .map(i -> Tuple2.of(i % k, i))
        .returns(Types.TUPLE(Types.LONG, Types.LONG))
        .keyBy(t -> t.f0)
        .process(new Count())
        .returns(Types.TUPLE(Types.LONG, Types.LONG, Types.LONG))
        .sinkTo(new DiscardingSink<>());
    env.execute("failover-count");
  }

  /** The running count and sum of a key, as keyed-count keeps them. */
  static final class Count
      extends KeyedProcessFunction<Long, Tuple2<Long, Long>, Tuple3<Long, Long, Long>> {
    private transient ValueState<Tuple2<Long, Long>> state;

    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
      state =
          getRuntimeContext()
              .getState(
                  new ValueStateDescriptor<>("n-sum", Types.TUPLE(Types.LONG, Types.LONG)));
    }

    @Override
    public void processElement(
        Tuple2<Long, Long> in, Context ctx, Collector<Tuple3<Long, Long, Long>> out)
        throws Exception {
      Tuple2<Long, Long> s = state.value();
      if (s == null) {
        s = Tuple2.of(0L, 0L);
      }
      s.f0 += 1;
      s.f1 += in.f1;
      state.update(s);
      out.collect(Tuple3.of(in.f0, s.f0, s.f1));
    }
  }
}
