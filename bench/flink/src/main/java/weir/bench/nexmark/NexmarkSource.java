package weir.bench.nexmark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.atomic.LongAdder;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.util.IteratorSourceEnumerator;
import org.apache.flink.api.connector.source.lib.util.IteratorSourceReader;
import org.apache.flink.api.connector.source.lib.util.IteratorSourceSplit;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.table.data.RowData;

/**
 * The NEXMARK table's source: a bounded FLIP-27 source with one split per source subtask, as
 * Nexmark's own NexmarkSource. A generated split is one of Nexmark's generator splits
 * ({@link NexmarkGenerator#split}) and its position, the events emitted so far, is what a
 * checkpoint keeps. A file split reads a JSON-lines file of events (`--input`): split k of n
 * takes the lines whose number is k mod n, in file order, and its position is the count of those
 * lines emitted.
 */
public final class NexmarkSource implements Source<RowData, NexmarkSource.Split, Collection<NexmarkSource.Split>>,
        ResultTypeQueryable<RowData> {
    private static final long serialVersionUID = 1L;

    /**
     * Events emitted by every split of this JVM, added when a split ends (not per record). The
     * MiniCluster runs in the benchmark's JVM, so the benchmark reads the job's event count here.
     */
    public static final LongAdder EMITTED = new LongAdder();

    private final long events;
    private final long eventsPerSecond;
    private final long baseTime;
    private final String input;
    private final TypeInformation<RowData> type;

    /**
     * @param baseTime the first event's time in epoch ms; negative: the wall clock when the
     *     splits are made, as Nexmark's table source does
     * @param input a JSON-lines file of events to read instead of generating, or null
     */
    public NexmarkSource(long events, long eventsPerSecond, long baseTime, String input, TypeInformation<RowData> type) {
        this.events = events;
        this.eventsPerSecond = eventsPerSecond;
        this.baseTime = baseTime;
        this.input = input;
        this.type = type;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return type;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SplitEnumerator<Split, Collection<Split>> createEnumerator(SplitEnumeratorContext<Split> ctx) {
        int n = ctx.currentParallelism();
        List<Split> splits = new ArrayList<>(n);
        if (input != null) {
            for (int i = 0; i < n; i++) {
                splits.add(new Split(i, null, input, n, 0));
            }
        } else {
            long base = baseTime >= 0 ? baseTime : System.currentTimeMillis();
            NexmarkGenerator[] gens = NexmarkGenerator.split(base, events, eventsPerSecond, n);
            for (int i = 0; i < n; i++) {
                splits.add(new Split(i, gens[i], null, n, 0));
            }
        }
        return new IteratorSourceEnumerator<>(ctx, splits);
    }

    @Override
    public SplitEnumerator<Split, Collection<Split>> restoreEnumerator(SplitEnumeratorContext<Split> ctx,
                                                                        Collection<Split> checkpoint) {
        return new IteratorSourceEnumerator<>(ctx, checkpoint);
    }

    @Override
    public SourceReader<RowData, Split> createReader(SourceReaderContext ctx) {
        return new IteratorSourceReader<>(ctx);
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Collection<Split>> getEnumeratorCheckpointSerializer() {
        return new CheckpointSerializer();
    }

    /** A generator split or a file split, with the count of events it has emitted. */
    public static final class Split implements IteratorSourceSplit<RowData, Events> {
        final int index;
        final NexmarkGenerator gen; // null for a file split
        final String path;          // null for a generator split
        final int of;
        final long emitted;

        Split(int index, NexmarkGenerator gen, String path, int of, long emitted) {
            this.index = index;
            this.gen = gen;
            this.path = path;
            this.of = of;
            this.emitted = emitted;
        }

        @Override
        public String splitId() {
            return Integer.toString(index);
        }

        @Override
        public Events getIterator() {
            return new Events(this);
        }

        @Override
        public IteratorSourceSplit<RowData, Events> getUpdatedSplitForIterator(Events it) {
            return new Split(index, gen, path, of, it.count);
        }

        @Override
        public String toString() {
            return "nexmark split " + index + "/" + of + (path != null ? " of " + path : "") + " at " + emitted;
        }
    }

    /** The events of one split from its position on, as NEXMARK table rows. */
    public static final class Events implements Iterator<RowData> {
        private final Split split;
        private final Event event = new Event();
        private long count;
        private long max;
        private BufferedReader reader;
        private long lineNo;
        private String pending;
        private boolean done;

        Events(Split s) {
            this.split = s;
            this.count = s.emitted;
            this.max = s.gen != null ? s.gen.maxEvents : Long.MAX_VALUE;
        }

        @Override
        public boolean hasNext() {
            if (done) {
                return false;
            }
            boolean more = split.gen != null ? count < max : nextLine();
            if (!more) {
                // Every split starts its count at its checkpointed position; only what this run
                // emitted counts.
                EMITTED.add(count - split.emitted);
                done = true;
                close();
            }
            return more;
        }

        @Override
        public RowData next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            if (split.gen != null) {
                split.gen.event(count, event);
            } else {
                try {
                    Event.parse(pending, event, lineNo);
                } catch (IOException e) {
                    throw new UncheckedIOException(split.path + ": " + e.getMessage(), e);
                }
                pending = null;
            }
            count++;
            return event.toRow();
        }

        // Positions the file on this split's next line (lines k, k+n, ... of the non-empty
        // lines), skipping the lines emitted before a restore.
        private boolean nextLine() {
            if (pending != null) {
                return true;
            }
            try {
                if (reader == null) {
                    reader = Files.newBufferedReader(Paths.get(split.path), StandardCharsets.UTF_8);
                    long skip = split.emitted;
                    while (skip > 0) {
                        String l = mine();
                        if (l == null) {
                            return false;
                        }
                        skip--;
                    }
                }
                pending = mine();
                return pending != null;
            } catch (IOException e) {
                throw new UncheckedIOException(split.path + ": " + e.getMessage(), e);
            }
        }

        private long nonEmpty; // non-empty lines read so far, over all splits' lines

        private String mine() throws IOException {
            String l;
            while ((l = reader.readLine()) != null) {
                lineNo++;
                if (l.isBlank()) {
                    continue;
                }
                long k = nonEmpty++;
                if (k % split.of == split.index) {
                    return l;
                }
            }
            return null;
        }

        private void close() {
            if (reader != null) {
                try {
                    reader.close();
                } catch (IOException ignored) {
                    // Read-only file, nothing to lose.
                }
                reader = null;
            }
        }
    }

    static void writeSplit(DataOutputSerializer out, Split s) throws IOException {
        out.writeInt(s.index);
        out.writeInt(s.of);
        out.writeLong(s.emitted);
        out.writeBoolean(s.gen != null);
        if (s.gen != null) {
            out.writeLong(s.gen.baseTime);
            out.writeLong(s.gen.firstEventId);
            out.writeLong(s.gen.maxEvents);
            out.writeLong(s.gen.firstEventNumber);
            out.writeDouble(s.gen.interEventDelayUs);
        } else {
            out.writeUTF(s.path);
        }
    }

    static Split readSplit(DataInputDeserializer in) throws IOException {
        int index = in.readInt();
        int of = in.readInt();
        long emitted = in.readLong();
        if (in.readBoolean()) {
            long base = in.readLong();
            long firstId = in.readLong();
            long max = in.readLong();
            long firstNumber = in.readLong();
            double delay = in.readDouble();
            return new Split(index, new NexmarkGenerator(base, firstId, max, firstNumber, delay), null, of, emitted);
        }
        return new Split(index, null, in.readUTF(), of, emitted);
    }

    static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split s) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(64);
            writeSplit(out, s);
            return out.getCopyOfBuffer();
        }

        @Override
        public Split deserialize(int version, byte[] b) throws IOException {
            if (version != 1) {
                throw new IOException("nexmark split: unknown version " + version);
            }
            return readSplit(new DataInputDeserializer(b));
        }
    }

    static final class CheckpointSerializer implements SimpleVersionedSerializer<Collection<Split>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Collection<Split> splits) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(256);
            out.writeInt(splits.size());
            for (Split s : splits) {
                writeSplit(out, s);
            }
            return out.getCopyOfBuffer();
        }

        @Override
        public Collection<Split> deserialize(int version, byte[] b) throws IOException {
            if (version != 1) {
                throw new IOException("nexmark enumerator checkpoint: unknown version " + version);
            }
            DataInputDeserializer in = new DataInputDeserializer(b);
            int n = in.readInt();
            List<Split> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(readSplit(in));
            }
            return out;
        }
    }
}
