package weir.bench.nexmark;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * Nexmark's queries on Apache Flink (issue 13's peer): each query's SQL text, as nexmark-flink
 * ships it (resources nexmark/qN.sql), through the Table API on a local MiniCluster, fed by
 * {@link NexmarkGenerator} through the 'weir-nexmark' table (resources nexmark/ddl_gen.sql and
 * ddl_views.sql, Nexmark's DDL with the connector swapped).
 *
 * <p>Usage:
 * <pre>
 * NexmarkBench qN|all [--events N] [--tps R] [--parallelism P] [--backend hashmap|rocksdb]
 *     [--checkpoint-interval MS] [--base-time MS] [--input FILE] [--dump FILE|DIR]
 * NexmarkBench generate --events N [--tps R] [--parallelism P] [--base-time MS] --output FILE|-
 * </pre>
 * ({@code generate} defaults to one generator, a file in event-time order.)
 * A run prints one JSON line per query (events counted by the source, process CPU seconds from
 * after the cluster is up and the job declared to the job's end, wall seconds, events per CPU
 * second, and with --dump the rows of the final result table).
 */
public final class NexmarkBench {
    /** The queries Flink 2.3 runs here; q6, q10, q12 and q13 are left out (see the docs). */
    static final String[] QUERIES = {"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q14", "q15",
        "q16", "q17", "q18", "q19", "q20", "q21", "q22"};

    /**
     * Queries whose changelog Flink 2.3 emits as upserts (update-after without update-before)
     * into a result table without a primary key, with the columns that key them. q9's top-1 Rank
     * is planned insert-only ("changelogMode=[I]" in its plan) yet emits an update-after each time
     * an auction's winning bid changes; its partition key, the auction id, keys those updates.
     */
    static final java.util.Map<String, String> UPSERT_KEYS = java.util.Map.of("q9", "id");

    long events = 10_000_000L;
    long tps = 10_000_000L;
    int parallelism = 2;
    boolean parallelismSet;
    String backend = "hashmap";
    long checkpointMs = 0;
    long baseTime = -1;
    String input;
    String dump;
    String output;

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("needs a query (q0..q22, all) or generate");
        }
        NexmarkBench b = new NexmarkBench();
        String what = args[0];
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                usage("flag " + args[i] + " needs a value");
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--events" -> b.events = Long.parseLong(v);
                case "--tps" -> b.tps = Long.parseLong(v);
                case "--parallelism" -> {
                    b.parallelism = Integer.parseInt(v);
                    b.parallelismSet = true;
                }
                case "--backend" -> b.backend = v;
                case "--checkpoint-interval" -> b.checkpointMs = parseMillis(v);
                case "--base-time" -> b.baseTime = Long.parseLong(v);
                case "--input" -> b.input = v;
                case "--dump" -> b.dump = v;
                case "--output" -> b.output = v;
                default -> usage("unknown flag " + args[i]);
            }
        }
        if (!b.backend.equals("hashmap") && !b.backend.equals("rocksdb")) {
            usage("--backend must be hashmap or rocksdb");
        }
        if (b.events <= 0 || b.tps <= 0 || b.parallelism <= 0) {
            usage("--events, --tps and --parallelism must be positive");
        }
        if (what.equals("generate")) {
            if (b.output == null) {
                usage("generate needs --output FILE (- for stdout)");
            }
            // One generator by default: a file in event-time order, which --input can read
            // without late events. --parallelism P writes Nexmark's P split time lines in turn.
            if (!b.parallelismSet) {
                b.parallelism = 1;
            }
            b.generate();
            return;
        }
        List<String> queries = new ArrayList<>();
        if (what.equals("all")) {
            queries.addAll(List.of(QUERIES));
        } else if (List.of(QUERIES).contains(what)) {
            queries.add(what);
        } else if (List.of("q6", "q10", "q12", "q13").contains(what)) {
            usage(what + " is not run by this peer: " + why(what));
        } else {
            usage("unknown query " + what);
        }
        if (b.input != null && !Files.isReadable(Paths.get(b.input))) {
            usage("--input " + b.input + " is not a readable file");
        }
        if (b.dump != null && queries.size() > 1) {
            Files.createDirectories(Paths.get(b.dump));
        }
        int failed = 0;
        for (String q : queries) {
            try {
                b.run(q, queries.size() > 1);
            } catch (Exception e) {
                failed++;
                System.err.println("NexmarkBench " + q + " failed: " + e);
                Throwable c = e;
                while (c.getCause() != null) {
                    c = c.getCause();
                }
                if (c != e) {
                    System.err.println("  root cause: " + c);
                }
                System.out.println(String.format(Locale.ROOT,
                        "{\"engine\":\"flink\",\"query\":\"%s\",\"error\":\"%s\"}", q, c.toString().replace("\\", "\\\\").replace("\"", "'")));
            }
        }
        if (failed > 0) {
            System.exit(1);
        }
    }

    static String why(String q) {
        return switch (q) {
            case "q6" -> "Flink's SQL rejects its OVER window on an updating input (validation fails)";
            case "q10" -> "it writes files to a filesystem sink partitioned by processing time";
            case "q12" -> "its windows are on processing time, not comparable across engines";
            default -> "it joins a side-input file that Nexmark's setup provides";
        };
    }

    static long parseMillis(String v) {
        if (v.endsWith("ms")) {
            return Long.parseLong(v.substring(0, v.length() - 2));
        }
        if (v.endsWith("s")) {
            return Long.parseLong(v.substring(0, v.length() - 1)) * 1000;
        }
        return Long.parseLong(v);
    }

    static void usage(String msg) {
        System.err.println("NexmarkBench: " + msg);
        System.err.println("usage: NexmarkBench qN|all [--events N] [--tps R] [--parallelism P] [--backend hashmap|rocksdb]\n"
                + "           [--checkpoint-interval MS|Ns] [--base-time MS] [--input FILE] [--dump FILE|DIR]\n"
                + "       NexmarkBench generate --events N [--tps R] [--parallelism P] [--base-time MS] --output FILE|-");
        System.exit(2);
    }

    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    static String resource(String name) throws IOException {
        try (InputStream in = NexmarkBench.class.getResourceAsStream("/nexmark/" + name)) {
            if (in == null) {
                throw new IOException("missing resource nexmark/" + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** The statements of a SQL file: comments (-- to the end of the line) out, split at ';'. */
    static List<String> statements(String sql) {
        StringBuilder sb = new StringBuilder();
        for (String line : sql.split("\n")) {
            int c = line.indexOf("--");
            sb.append(c >= 0 ? line.substring(0, c) : line).append('\n');
        }
        List<String> out = new ArrayList<>();
        for (String s : sb.toString().split(";")) {
            if (!s.isBlank()) {
                out.add(s.trim());
            }
        }
        return out;
    }

    /**
     * The events the Flink source emits, in the order of its splits, as JSON lines: parallelism P
     * gives Nexmark's P generator splits (each on its own time line), one after the other.
     */
    void generate() throws IOException {
        long base = baseTime >= 0 ? baseTime : System.currentTimeMillis();
        NexmarkGenerator[] gens = NexmarkGenerator.split(base, events, tps, parallelism);
        Writer w = output.equals("-")
                ? new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16)
                : Files.newBufferedWriter(Paths.get(output), StandardCharsets.UTF_8);
        Event e = new Event();
        StringBuilder sb = new StringBuilder(512);
        try (w) {
            for (NexmarkGenerator g : gens) {
                for (long i = 0; i < g.maxEvents; i++) {
                    g.event(i, e);
                    sb.setLength(0);
                    e.toJson(sb);
                    sb.append('\n');
                    w.append(sb);
                }
            }
        }
    }

    void run(String query, boolean many) throws Exception {
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, backend);
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
        // A failure fails the run: with checkpoints on, Flink's default is to restart forever,
        // which turned a failing checkpoint into a job that never ended.
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        Path checkpoints = null;
        if (checkpointMs > 0) {
            conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(checkpointMs));
            // Checkpoints to files, as a real deployment: the default JobManager-memory storage
            // refuses a checkpoint of more than 5 MB (q4's join state passes that in seconds).
            checkpoints = Files.createTempDirectory("nexmark-checkpoints");
            conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        }
        // Nexmark's TIMESTAMP(3) columns are zone-less; UTC keeps any zone-dependent function
        // (none of the queries here uses one) the same on every machine.
        conf.setString("table.local-time-zone", "UTC");
        // Any free port for the cluster's REST endpoint: 8081 may be taken by another run.
        conf.set(RestOptions.BIND_PORT, "0");
        MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(parallelism)
                .build());
        cluster.start();
        try {
            StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
            env.setParallelism(parallelism);
            StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
            String ddl = resource("ddl_gen.sql")
                    .replace("${TPS}", Long.toString(tps))
                    .replace("${EVENTS_NUM}", Long.toString(input != null ? 0 : events))
                    .replace("${BASE_TIME}", Long.toString(baseTime))
                    .replace("${INPUT}", input != null ? ",\n    'input' = '" + input.replace("'", "''") + "'" : "");
            for (String s : statements(ddl)) {
                tEnv.executeSql(s);
            }
            for (String s : statements(resource("ddl_views.sql").replace("${NEXMARK_TABLE}", "datagen"))) {
                tEnv.executeSql(s);
            }
            String dumpFile = null;
            if (dump != null) {
                dumpFile = many ? Paths.get(dump, query + ".jsonl").toString() : dump;
            }
            StreamStatementSet set = tEnv.createStatementSet();
            int inserts = 0;
            for (String s : statements(resource(query + ".sql"))) {
                if (s.regionMatches(true, 0, "INSERT", 0, 6)) {
                    set.addInsertSql(s);
                    inserts++;
                } else {
                    if (dumpFile != null) {
                        String key = UPSERT_KEYS.get(query);
                        String swapped = s.replace("'connector' = 'blackhole'",
                                "'connector' = 'weir-dump', 'path' = '" + dumpFile.replace("'", "''") + "'"
                                        + (key != null ? ", 'upsert-key' = '" + key + "'" : ""));
                        if (s.startsWith("CREATE TABLE") && swapped.equals(s)) {
                            throw new IllegalStateException(query + ": result table without a blackhole connector");
                        }
                        s = swapped;
                    }
                    tEnv.executeSql(s);
                }
            }
            if (inserts != 1) {
                throw new IllegalStateException(query + ": expected one INSERT, found " + inserts);
            }
            set.attachAsDataStream();
            JobGraph graph = env.getStreamGraph().getJobGraph();
            NexmarkSource.EMITTED.reset();
            DumpTableFactory.lastRows = -1;
            // The clock starts here: the cluster is up, the job is planned and declared.
            long cpu0 = processCpuNanos();
            long wall0 = System.nanoTime();
            cluster.executeJobBlocking(graph);
            long cpu = processCpuNanos() - cpu0;
            long wall = System.nanoTime() - wall0;
            long n = NexmarkSource.EMITTED.sum();
            // Completed checkpoints (the final one included), so a report can say whether a
            // run with checkpointing lasted long enough to take any.
            long completed = 0;
            if (checkpointMs > 0) {
                var stats = cluster.getArchivedExecutionGraph(graph.getJobID()).get().getCheckpointStatsSnapshot();
                if (stats != null) {
                    completed = stats.getCounts().getNumberOfCompletedCheckpoints();
                }
            }
            if (input == null && n != events) {
                throw new IllegalStateException(query + ": the source emitted " + n + " events, not " + events);
            }
            String rows = dumpFile != null ? String.format(Locale.ROOT, ",\"result_rows\":%d,\"dump\":\"%s\"",
                    DumpTableFactory.lastRows, dumpFile.replace("\\", "\\\\").replace("\"", "\\\"")) : "";
            System.out.println(String.format(Locale.ROOT,
                    "{\"engine\":\"flink\",\"flink\":\"%s\",\"query\":\"%s\",\"parallelism\":%d,\"backend\":\"%s\","
                            + "\"checkpoint_ms\":%d,\"tps\":%d,\"events\":%d,\"cpu_s\":%.4f,\"wall_s\":%.4f,"
                            + "\"events_per_cpu_s\":%.1f,\"checkpoints\":%d%s}",
                    org.apache.flink.runtime.util.EnvironmentInformation.getVersion(), query, parallelism, backend,
                    checkpointMs, tps, n, cpu / 1e9, wall / 1e9, n / (cpu / 1e9), completed, rows));
        } finally {
            cluster.close();
            if (checkpoints != null) {
                deleteTree(checkpoints);
            }
        }
    }

    static void deleteTree(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
