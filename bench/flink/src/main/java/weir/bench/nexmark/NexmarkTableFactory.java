package weir.bench.nexmark;

import java.util.Set;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;

/**
 * The table connector 'weir-nexmark', the stand-in for Nexmark's 'nexmark' connector in its
 * ddl_gen.sql: a NEXMARK table of generated events (or of a JSON-lines file of events), read by
 * {@link NexmarkSource}. Registered through META-INF/services, as Flink finds connectors.
 */
public final class NexmarkTableFactory implements DynamicTableSourceFactory {
    public static final String IDENTIFIER = "weir-nexmark";

    static final ConfigOption<Long> EVENTS = ConfigOptions.key("events.num").longType().defaultValue(0L);
    static final ConfigOption<Long> RATE = ConfigOptions.key("first-event.rate").longType().defaultValue(10_000_000L);
    static final ConfigOption<Long> BASE_TIME = ConfigOptions.key("base-time").longType().defaultValue(-1L);
    static final ConfigOption<String> INPUT = ConfigOptions.key("input").stringType().noDefaultValue();

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(EVENTS, RATE, BASE_TIME, INPUT);
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        ReadableConfig o = helper.getOptions();
        String input = o.getOptional(INPUT).orElse(null);
        if (input == null && o.get(EVENTS) <= 0) {
            throw new IllegalArgumentException("weir-nexmark: events.num must be positive (the source is bounded)");
        }
        return new TableSource(o.get(EVENTS), o.get(RATE), o.get(BASE_TIME), input, context.getPhysicalRowDataType());
    }

    static final class TableSource implements ScanTableSource {
        private final long events;
        private final long rate;
        private final long baseTime;
        private final String input;
        private final DataType rowType;

        TableSource(long events, long rate, long baseTime, String input, DataType rowType) {
            this.events = events;
            this.rate = rate;
            this.baseTime = baseTime;
            this.input = input;
            this.rowType = rowType;
        }

        @Override
        public ChangelogMode getChangelogMode() {
            return ChangelogMode.insertOnly();
        }

        @Override
        public ScanRuntimeProvider getScanRuntimeProvider(ScanContext ctx) {
            return SourceProvider.of(new NexmarkSource(events, rate, baseTime, input,
                    ctx.<RowData>createTypeInformation(rowType)));
        }

        @Override
        public DynamicTableSource copy() {
            return new TableSource(events, rate, baseTime, input, rowType);
        }

        @Override
        public String asSummaryString() {
            return "Nexmark events (Weir's port of Nexmark's generator)";
        }
    }
}
