package weir.bench.nexmark;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

/**
 * The table connector 'weir-dump', which takes the place of 'blackhole' in a query's result table
 * for `--dump`: the sink subtasks materialize the changelog they receive into one table (an
 * insert or update-after adds a row, a delete or update-before takes one occurrence away) and,
 * when the last one's bounded input ends, it writes the final table as JSON lines keyed by the result table's column names
 * (timestamps as epoch ms, decimals as JSON numbers), sorted so two runs compare with diff.
 */
public final class DumpTableFactory implements DynamicTableSinkFactory {
    public static final String IDENTIFIER = "weir-dump";

    static final ConfigOption<String> PATH = ConfigOptions.key("path").stringType().noDefaultValue();
    /**
     * Columns that key an upsert changelog (an update-after with no update-before replaces the
     * row of its key), for a query whose changelog Flink emits that way although the result
     * table has no primary key (q9: see docs/nexmark-flink-peer.md).
     */
    static final ConfigOption<String> UPSERT_KEY = ConfigOptions.key("upsert-key").stringType().noDefaultValue();

    /** Rows written by the last dump sink of this JVM, for the benchmark's report. */
    public static volatile long lastRows = -1;

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(PATH);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(UPSERT_KEY);
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        RowType type = (RowType) context.getPhysicalRowDataType().getLogicalType();
        int[] key = null;
        String k = helper.getOptions().getOptional(UPSERT_KEY).orElse(null);
        if (k != null) {
            String[] cols = k.split(",");
            key = new int[cols.length];
            for (int i = 0; i < cols.length; i++) {
                key[i] = type.getFieldIndex(cols[i].trim());
                if (key[i] < 0) {
                    throw new IllegalArgumentException("weir-dump: upsert-key column " + cols[i] + " is not in the table");
                }
            }
        }
        return new TableSink(helper.getOptions().get(PATH), type, key);
    }

    static final class TableSink implements DynamicTableSink {
        private final String path;
        private final RowType type;

        private final int[] key;

        TableSink(String path, RowType type, int[] key) {
            this.path = path;
            this.type = type;
            this.key = key;
        }

        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            // Every kind of change: the sink keeps the materialized table itself.
            return ChangelogMode.all();
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
            // The input's parallelism, so Flink keeps a forward edge: every retraction reaches the
            // sink subtask that received the row it retracts. (A parallelism of 1 would need a
            // primary key on the result table, which Nexmark's tables do not have.)
            return SinkV2Provider.of(new DumpSink(path, type, key));
        }

        @Override
        public DynamicTableSink copy() {
            return new TableSink(path, type, key);
        }

        @Override
        public String asSummaryString() {
            return "JSON-lines dump of the final result table";
        }
    }

    static final class DumpSink implements Sink<RowData> {
        private static final long serialVersionUID = 1L;
        private final String path;
        private final RowType type;

        private final int[] key;

        DumpSink(String path, RowType type, int[] key) {
            this.path = path;
            this.type = type;
            this.key = key;
        }

        @Override
        public SinkWriter<RowData> createWriter(WriterInitContext context) {
            Table t;
            synchronized (TABLES) {
                t = TABLES.computeIfAbsent(path, p -> new Table(p, context.getTaskInfo().getNumberOfParallelSubtasks()));
            }
            return new Writer(t, type, key);
        }
    }

    // The sink subtasks of one dump run in this JVM (a local MiniCluster) and share its table.
    static final Map<String, Table> TABLES = new HashMap<>();

    /** The materialized result table of one dump, shared by its sink subtasks. */
    static final class Table {
        final String path;
        int open;
        final Map<String, Integer> rows = new HashMap<>();
        final Map<String, String> byKey = new HashMap<>();
        long unmatchedRetractions;
        final long[] kinds = new long[RowKind.values().length];

        Table(String path, int subtasks) {
            this.path = path;
            this.open = subtasks;
        }

        synchronized void add(String key, String row, RowKind kind) {
            kinds[kind.ordinal()]++;
            boolean insert = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER;
            if (key != null) {
                if (insert) {
                    byKey.put(key, row);
                } else if (byKey.remove(key) == null) {
                    unmatchedRetractions++;
                }
                return;
            }
            if (insert) {
                rows.merge(row, 1, Integer::sum);
                return;
            }
            Integer c = rows.get(row);
            if (c == null) {
                unmatchedRetractions++;
            } else if (c == 1) {
                rows.remove(row);
            } else {
                rows.put(row, c - 1);
            }
        }

        /** A subtask's input ended; the last one writes the file. */
        void finish() throws IOException {
            synchronized (this) {
                if (--open > 0) {
                    return;
                }
            }
            synchronized (TABLES) {
                TABLES.remove(path);
            }
            if (unmatchedRetractions > 0) {
                throw new IOException(path + ": " + unmatchedRetractions
                        + " retractions of rows the sink never received; the materialized table would be wrong");
            }
            List<String> lines = new ArrayList<>(rows.size() + byKey.size());
            lines.addAll(byKey.values());
            for (Map.Entry<String, Integer> e : rows.entrySet()) {
                for (int i = 0; i < e.getValue(); i++) {
                    lines.add(e.getKey());
                }
            }
            lines.sort(null);
            try (BufferedWriter w = Files.newBufferedWriter(Paths.get(path), StandardCharsets.UTF_8)) {
                for (String l : lines) {
                    w.write(l);
                    w.write('\n');
                }
            }
            lastRows = lines.size();
            System.err.printf("weir-dump %s: %d rows; changes received: %d +I, %d -U, %d +U, %d -D%n", path,
                    lines.size(), kinds[0], kinds[1], kinds[2], kinds[3]);
        }
    }

    static final class Writer implements SinkWriter<RowData> {
        private final Table table;
        private final String[] names;
        private final RowData.FieldGetter[] getters;
        private final StringBuilder sb = new StringBuilder(256);
        private boolean finished;

        private final int[] key;

        Writer(Table table, RowType type, int[] key) {
            this.table = table;
            this.key = key;
            int n = type.getFieldCount();
            names = type.getFieldNames().toArray(new String[0]);
            getters = new RowData.FieldGetter[n];
            for (int i = 0; i < n; i++) {
                LogicalType t = type.getTypeAt(i);
                getters[i] = RowData.createFieldGetter(t, i);
            }
        }

        @Override
        public void write(RowData row, Context context) {
            RowKind k = row.getRowKind();
            String r = json(row);
            String kk = null;
            if (key != null) {
                StringBuilder ks = new StringBuilder();
                for (int i : key) {
                    ks.append(getters[i].getFieldOrNull(row)).append('\u0001');
                }
                kk = ks.toString();
            }
            table.add(kk, r, k);
        }

        private String json(RowData row) {
            sb.setLength(0);
            sb.append('{');
            for (int i = 0; i < names.length; i++) {
                if (i > 0) {
                    sb.append(',');
                }
                Json.quote(sb, names[i]);
                sb.append(':');
                Object v = getters[i].getFieldOrNull(row);
                if (v == null) {
                    sb.append("null");
                } else if (v instanceof StringData s) {
                    Json.quote(sb, s.toString());
                } else if (v instanceof TimestampData t) {
                    sb.append(t.getMillisecond());
                } else if (v instanceof DecimalData d) {
                    sb.append(d.toBigDecimal().toPlainString());
                } else if (v instanceof Number || v instanceof Boolean) {
                    sb.append(v);
                } else {
                    Json.quote(sb, v.toString());
                }
            }
            sb.append('}');
            return sb.toString();
        }

        @Override
        public void flush(boolean endOfInput) throws IOException {
            if (endOfInput && !finished) {
                finished = true;
                table.finish();
            }
        }

        @Override
        public void close() {
        }
    }
}
