package weir.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Locale;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.Collector;

/**
 * Weir's benchmark jobs (internal/benchjobs) on Apache Flink, each run on a local MiniCluster
 * started before the CPU clock. Prints one JSON line per run: events (counted by the job), CPU
 * seconds of the whole JVM process from after the cluster was up to the job's end, wall seconds
 * of the same span, and events per CPU second.
 *
 * <p>Usage: FlinkBench JOB [--events N] [--parallelism P] [--keys K] [--backend hashmap|rocksdb]
 * [--input FILE] [--output DIR]; JOB is chained, shuffle, wordcount, keyed, window or intervaljoin.
 */
public final class FlinkBench {
    static final String EVENTS = "events";

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("needs a job name");
        }
        String job = args[0];
        long events = 50_000_000L;
        int parallelism = -1;
        long keys = -1;
        String backend = "hashmap";
        String input = null;
        String output = null;
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                usage("flag " + args[i] + " needs a value");
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--events" -> events = Long.parseLong(v);
                case "--parallelism" -> parallelism = Integer.parseInt(v);
                case "--keys" -> keys = Long.parseLong(v);
                case "--backend" -> backend = v;
                case "--input" -> input = v;
                case "--output" -> output = v;
                default -> usage("unknown flag " + args[i]);
            }
        }
        if (parallelism < 0) {
            parallelism = job.equals("chained") ? 1 : 2;
        }
        if (keys < 0) {
            keys = job.equals("keyed") ? 10_000 : 100_000;
        }
        if (!backend.equals("hashmap") && !backend.equals("rocksdb")) {
            usage("--backend must be hashmap or rocksdb");
        }

        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, backend);
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
        MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(parallelism)
                .build());
        cluster.start();
        try {
            StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
            env.setParallelism(parallelism);
            switch (job) {
                case "chained" -> chained(env, events);
                case "shuffle" -> shuffle(env, events);
                case "wordcount" -> {
                    if (input == null || output == null) {
                        usage("wordcount needs --input FILE and --output DIR");
                    }
                    wordcount(env, input, output);
                }
                case "keyed" -> keyed(env, events, keys);
                case "window" -> window(env, events, keys);
                case "intervaljoin" -> intervalJoin(env, events, keys);
                default -> usage("unknown job " + job);
            }
            JobGraph graph = env.getStreamGraph().getJobGraph();
            // The clock starts here: the cluster is up, the job is declared.
            long cpu0 = processCpuNanos();
            long wall0 = System.nanoTime();
            JobExecutionResult result = cluster.executeJobBlocking(graph);
            long cpu = processCpuNanos() - cpu0;
            long wall = System.nanoTime() - wall0;
            Long counted = result.getAccumulatorResult(EVENTS);
            long n = counted == null ? 0 : counted;
            System.out.println(String.format(Locale.ROOT,
                    "{\"engine\":\"flink\",\"flink\":\"%s\",\"job\":\"%s\",\"parallelism\":%d,\"backend\":\"%s\","
                            + "\"keys\":%d,\"events\":%d,\"cpu_s\":%.4f,\"wall_s\":%.4f,\"events_per_cpu_s\":%.1f}",
                    org.apache.flink.runtime.util.EnvironmentInformation.getVersion(), job, parallelism, backend,
                    keys, n, cpu / 1e9, wall / 1e9, n / (cpu / 1e9)));
        } finally {
            cluster.close();
        }
    }

    static void usage(String msg) {
        System.err.println("FlinkBench: " + msg);
        System.err.println("usage: FlinkBench chained|shuffle|wordcount|keyed|window|intervaljoin "
                + "[--events N] [--parallelism P] [--keys K] [--backend hashmap|rocksdb] [--input FILE --output DIR]");
        System.exit(2);
    }

    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /**
     * A map that counts what passes through it in a plain field and adds the count to the job's
     * "events" accumulator once, when it closes: the job counts its events at no per-record cost
     * beyond an increment.
     */
    abstract static class CountingMap<I, O> extends RichMapFunction<I, O> {
        private long seen;

        @Override
        public final O map(I value) {
            seen++;
            return apply(value);
        }

        abstract O apply(I value);

        @Override
        public void close() {
            LongCounter c = new LongCounter(seen);
            getRuntimeContext().addAccumulator(EVENTS, c);
        }
    }

    // (a) generator -> map -> filter -> discard, chained (benchjobs.ChainedMapFilter).
    static void chained(StreamExecutionEnvironment env, long n) {
        env.fromSequence(0, n - 1)
                .map(new CountingMap<Long, Long>() {
                    @Override
                    Long apply(Long v) {
                        return v * 3 + 1;
                    }
                })
                .filter(v -> v % 5 != 0)
                .sinkTo(new DiscardingSink<>());
    }

    // (b) generator of (i, 3i) -> map -> keyBy(f0) -> filter -> discard (benchjobs.ShuffleInt64Pairs).
    static void shuffle(StreamExecutionEnvironment env, long n) {
        env.fromSequence(0, n - 1)
                .map(new CountingMap<Long, Tuple2<Long, Long>>() {
                    @Override
                    Tuple2<Long, Long> apply(Long i) {
                        return Tuple2.of(i, i * 3 + 1);
                    }
                })
                .keyBy(p -> p.f0, org.apache.flink.api.common.typeinfo.Types.LONG)
                .filter(p -> p.f1 % 5 != 0)
                .sinkTo(new DiscardingSink<>());
    }

    // (c) wordcount in batch mode (jobs/wordcount): tokenize (lower case, runs of letters and
    // digits), keyBy word, sum, write the counts as text at parallelism 1.
    static void wordcount(StreamExecutionEnvironment env, String input, String output) {
        env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        FileSource<String> src = FileSource.forRecordStreamFormat(new TextLineInputFormat(), new Path(input)).build();
        env.fromSource(src, WatermarkStrategy.noWatermarks(), "text")
                .flatMap(new RichFlatMapFunction<String, Tuple2<String, Long>>() {
                    private long seen;

                    @Override
                    public void flatMap(String line, Collector<Tuple2<String, Long>> out) {
                        String lower = line.toLowerCase(Locale.ROOT);
                        int start = -1;
                        for (int i = 0; i < lower.length(); ) {
                            int cp = lower.codePointAt(i);
                            boolean word = Character.isLetterOrDigit(cp);
                            if (word && start < 0) {
                                start = i;
                            } else if (!word && start >= 0) {
                                seen++;
                                out.collect(Tuple2.of(lower.substring(start, i), 1L));
                                start = -1;
                            }
                            i += Character.charCount(cp);
                        }
                        if (start >= 0) {
                            seen++;
                            out.collect(Tuple2.of(lower.substring(start), 1L));
                        }
                    }

                    @Override
                    public void close() {
                        getRuntimeContext().addAccumulator(EVENTS, new LongCounter(seen));
                    }
                })
                .keyBy(t -> t.f0, org.apache.flink.api.common.typeinfo.Types.STRING)
                .reduce((a, b) -> Tuple2.of(a.f0, a.f1 + b.f1))
                .map(t -> t.f0 + "\t" + t.f1)
                .sinkTo(FileSink.forRowFormat(new Path(output), new SimpleStringEncoder<String>()).build())
                .setParallelism(1);
    }

    // (d)/(e) generator of (i mod keys, 1) -> keyBy -> count in ValueState (a keyed reduce) ->
    // discard (benchjobs.KeyedCount).
    static void keyed(StreamExecutionEnvironment env, long n, long keys) {
        env.fromSequence(0, n - 1)
                .map(new CountingMap<Long, Tuple2<Long, Long>>() {
                    @Override
                    Tuple2<Long, Long> apply(Long i) {
                        return Tuple2.of(i % keys, 1L);
                    }
                })
                .keyBy(p -> p.f0, org.apache.flink.api.common.typeinfo.Types.LONG)
                .reduce((a, b) -> Tuple2.of(a.f0, a.f1 + b.f1))
                .sinkTo(new DiscardingSink<>());
    }

    // (f) generator of (i mod keys, ts = i/1000 ms), bounded-out-of-orderness watermarks (0),
    // keyBy, count per key in 10 s tumbling event-time windows, discard (benchjobs.WindowCount).
    static void window(StreamExecutionEnvironment env, long n, long keys) {
        env.fromSequence(0, n - 1)
                .map(new CountingMap<Long, Tuple2<Long, Long>>() {
                    @Override
                    Tuple2<Long, Long> apply(Long i) {
                        return Tuple2.of(i % keys, i / 1000);
                    }
                })
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Tuple2<Long, Long>>forBoundedOutOfOrderness(Duration.ZERO)
                        .withTimestampAssigner((p, ts) -> p.f1))
                .keyBy(p -> p.f0, org.apache.flink.api.common.typeinfo.Types.LONG)
                .window(TumblingEventTimeWindows.of(Duration.ofSeconds(10)))
                .aggregate(new CountAggregate())
                .sinkTo(new DiscardingSink<>());
    }

    static final class CountAggregate implements AggregateFunction<Tuple2<Long, Long>, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Tuple2<Long, Long> value, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    // (g) two generators of n (key, ts) records each ((i*salt) mod keys, ts = i/100 ms, salts 1
    // and 7), keyed, interval-joined within [-1 s, +1 s], emitting left.ts - right.ts, discarded
    // (benchjobs.IntervalJoin). Events are the input records of both sides, 2n.
    static void intervalJoin(StreamExecutionEnvironment env, long n, long keys) {
        KeyedStream<Tuple2<Long, Long>, Long> left = side(env, n, keys, 1);
        KeyedStream<Tuple2<Long, Long>, Long> right = side(env, n, keys, 7);
        left.intervalJoin(right)
                .between(Duration.ofSeconds(-1), Duration.ofSeconds(1))
                .process(new ProcessJoinFunction<Tuple2<Long, Long>, Tuple2<Long, Long>, Long>() {
                    @Override
                    public void processElement(Tuple2<Long, Long> l, Tuple2<Long, Long> r, Context ctx, Collector<Long> out) {
                        out.collect(l.f1 - r.f1);
                    }
                })
                .sinkTo(new DiscardingSink<>());
    }

    static KeyedStream<Tuple2<Long, Long>, Long> side(StreamExecutionEnvironment env, long n, long keys, long salt) {
        DataStream<Tuple2<Long, Long>> src = env.fromSequence(0, n - 1)
                .map(new CountingMap<Long, Tuple2<Long, Long>>() {
                    @Override
                    Tuple2<Long, Long> apply(Long i) {
                        return Tuple2.of((i * salt) % keys, i / 100);
                    }
                })
                .assignTimestampsAndWatermarks(WatermarkStrategy.<Tuple2<Long, Long>>forBoundedOutOfOrderness(Duration.ZERO)
                        .withTimestampAssigner((p, ts) -> p.f1));
        return src.keyBy(p -> p.f0, org.apache.flink.api.common.typeinfo.Types.LONG);
    }
}
