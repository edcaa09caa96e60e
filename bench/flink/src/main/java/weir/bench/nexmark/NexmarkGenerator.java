package weir.bench.nexmark;

import java.io.Serializable;
import java.util.Random;

/**
 * A port of Nexmark's event generator (github.com/nexmark/nexmark, module nexmark-flink:
 * {@code GeneratorConfig}, {@code NexmarkGenerator} and the model generators of
 * {@code generator/model}), written for Weir's Flink peer so that the peer needs nothing outside
 * Maven Central. The arithmetic, the order of the random draws and the constants are Nexmark's; see
 * docs/nexmark-flink-peer.md for the two places where it had to choose (the per-event seed, and the
 * channel URLs, which Nexmark draws from an unseeded random).
 *
 * <p>One generator is one of Nexmark's splits: Nexmark splits its configuration into one
 * sub-configuration per source subtask ({@link #split}), each with its own range of event ids but
 * all starting at the same event number, so each subtask runs on its own time line (the
 * inter-event delay is multiplied by the number of generators to keep the total rate).
 */
public final class NexmarkGenerator implements Serializable {
    private static final long serialVersionUID = 1L;

    // GeneratorConfig: ids start there so small streams still join.
    static final long FIRST_AUCTION_ID = 1000L;
    static final long FIRST_PERSON_ID = 1000L;
    static final long FIRST_CATEGORY_ID = 10L;

    // NexmarkConfiguration defaults (what nexmark-flink's ddl_gen.sql leaves at their defaults).
    static final int PERSON_PROPORTION = 1;
    static final int AUCTION_PROPORTION = 3;
    static final int BID_PROPORTION = 46;
    static final int TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION;
    static final int AVG_PERSON_BYTE_SIZE = 200;
    static final int AVG_AUCTION_BYTE_SIZE = 500;
    static final int AVG_BID_BYTE_SIZE = 100;
    static final int HOT_AUCTION_RATIO_CONF = 2;
    static final int HOT_SELLERS_RATIO_CONF = 4;
    static final int HOT_BIDDERS_RATIO_CONF = 4;
    static final int NUM_IN_FLIGHT_AUCTIONS = 100;
    static final int NUM_ACTIVE_PEOPLE = 1000;
    static final long OUT_OF_ORDER_GROUP_SIZE = 1;

    // The model generators' own constants.
    static final int NUM_CATEGORIES = 5;
    static final int AUCTION_ID_LEAD = 10;
    static final int PERSON_ID_LEAD = 10;
    static final int HOT_SELLER_RATIO = 100;
    static final int HOT_AUCTION_RATIO = 100;
    static final int HOT_BIDDER_RATIO = 100;
    static final int HOT_CHANNELS_RATIO = 2;
    static final int CHANNELS_NUMBER = 10_000;
    static final int MIN_STRING_LENGTH = 3;

    static final String[] US_STATES = "AZ,CA,ID,OR,WA,WY".split(",");
    static final String[] US_CITIES =
            "Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne".split(",");
    static final String[] FIRST_NAMES = "Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter".split(",");
    static final String[] LAST_NAMES = "Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris".split(",");
    static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};

    /** Seed of the random that draws the channel URLs (Nexmark's is unseeded: see the docs). */
    static final long CHANNEL_URL_SEED = 0L;

    static final String[] HOT_URLS = new String[HOT_CHANNELS.length];
    static final String[] CHANNEL_NAMES = new String[CHANNELS_NUMBER];
    static final String[] CHANNEL_URLS = new String[CHANNELS_NUMBER];

    static {
        // Nexmark's BidGenerator (since it pre-generates its cache): one random draws the four hot
        // URLs, then for each channel a URL and, nine times in ten, a channel_id parameter.
        Random r = new Random(CHANNEL_URL_SEED);
        for (int i = 0; i < HOT_URLS.length; i++) {
            HOT_URLS[i] = baseUrl(r);
        }
        for (int i = 0; i < CHANNELS_NUMBER; i++) {
            String url = baseUrl(r);
            if (r.nextInt(10) > 0) {
                url = url + "&channel_id=" + Math.abs(Integer.reverse(i));
            }
            CHANNEL_NAMES[i] = "channel-" + i;
            CHANNEL_URLS[i] = url;
        }
    }

    final long baseTime;
    final long firstEventId;
    final long maxEvents;
    final long firstEventNumber;
    final double interEventDelayUs;

    // One Random, re-seeded per event: new Random(id) and setSeed(id) give the same sequence.
    private transient Random random;

    /**
     * @param eventsPerSecond Nexmark's first-event.rate (events per second of event time, all
     *     generators together)
     * @param numGenerators Nexmark's numEventGenerators: the source parallelism
     */
    public NexmarkGenerator(long baseTime, long firstEventId, long maxEvents, long firstEventNumber,
                            long eventsPerSecond, int numGenerators) {
        // GeneratorConfig's interEventDelayUs[0], the same expression in the same order.
        this(baseTime, firstEventId, maxEvents, firstEventNumber, 1000000.0 / eventsPerSecond * numGenerators);
    }

    /** A generator with the inter-event delay as given (a split restored from a checkpoint). */
    NexmarkGenerator(long baseTime, long firstEventId, long maxEvents, long firstEventNumber, double interEventDelayUs) {
        this.baseTime = baseTime;
        this.firstEventId = firstEventId;
        this.maxEvents = maxEvents;
        this.firstEventNumber = firstEventNumber;
        this.interEventDelayUs = interEventDelayUs;
    }

    /**
     * Nexmark's table source configuration (NexmarkTableSourceFactory: first event id 1, first
     * event number 1) split into {@code n} generators as GeneratorConfig.split does.
     */
    public static NexmarkGenerator[] split(long baseTime, long events, long eventsPerSecond, int n) {
        NexmarkGenerator[] out = new NexmarkGenerator[n];
        long subMax = events / n;
        long firstId = 1;
        for (int i = 0; i < n; i++) {
            if (i == n - 1) {
                subMax = events - subMax * (n - 1);
            }
            out[i] = new NexmarkGenerator(baseTime, firstId, subMax, 1, eventsPerSecond, n);
            firstId += subMax;
        }
        return out;
    }

    long nextEventNumber(long numEvents) {
        return firstEventNumber + numEvents;
    }

    long nextAdjustedEventNumber(long numEvents) {
        long n = OUT_OF_ORDER_GROUP_SIZE;
        long eventNumber = nextEventNumber(numEvents);
        long base = (eventNumber / n) * n;
        long offset = (eventNumber * 953) % n;
        return base + offset;
    }

    long timestampForEvent(long eventNumber) {
        return baseTime + (long) (eventNumber * interEventDelayUs) / 1000L;
    }

    /** Fills {@code e} with the event this generator emits after {@code count} events. */
    public void event(long count, Event e) {
        if (random == null) {
            random = new Random();
        }
        long adjustedTimestamp = timestampForEvent(nextAdjustedEventNumber(count));
        long id = firstEventId + nextAdjustedEventNumber(count);
        random.setSeed(id);
        long rem = id % TOTAL_PROPORTION;
        if (rem < PERSON_PROPORTION) {
            person(id, random, adjustedTimestamp, e);
        } else if (rem < PERSON_PROPORTION + AUCTION_PROPORTION) {
            auction(count, id, random, adjustedTimestamp, e);
        } else {
            bid(id, random, adjustedTimestamp, e);
        }
    }

    // ---- PersonGenerator

    static long lastBase0PersonId(long eventId) {
        long epoch = eventId / TOTAL_PROPORTION;
        long offset = eventId % TOTAL_PROPORTION;
        if (offset >= PERSON_PROPORTION) {
            offset = PERSON_PROPORTION - 1;
        }
        return epoch * PERSON_PROPORTION + offset;
    }

    static long nextBase0PersonId(long eventId, Random random) {
        long numPeople = lastBase0PersonId(eventId) + 1;
        long activePeople = Math.min(numPeople, NUM_ACTIVE_PEOPLE);
        long n = nextLong(random, activePeople + PERSON_ID_LEAD);
        return numPeople - activePeople + n;
    }

    static void person(long eventId, Random random, long timestamp, Event e) {
        e.type = Event.PERSON;
        e.id = lastBase0PersonId(eventId) + FIRST_PERSON_ID;
        e.name = FIRST_NAMES[random.nextInt(FIRST_NAMES.length)] + " "
                + LAST_NAMES[random.nextInt(LAST_NAMES.length)];
        e.emailAddress = nextString(random, 7, ' ') + "@" + nextString(random, 5, ' ') + ".com";
        StringBuilder cc = new StringBuilder(19);
        for (int i = 0; i < 4; i++) {
            if (i > 0) {
                cc.append(' ');
            }
            int v = random.nextInt(10000);
            // String.format("%04d", v), without the formatter.
            cc.append((char) ('0' + v / 1000)).append((char) ('0' + v / 100 % 10))
                    .append((char) ('0' + v / 10 % 10)).append((char) ('0' + v % 10));
        }
        e.creditCard = cc.toString();
        e.city = US_CITIES[random.nextInt(US_CITIES.length)];
        e.state = US_STATES[random.nextInt(US_STATES.length)];
        e.dateTime = timestamp;
        int currentSize = 8 + e.name.length() + e.emailAddress.length() + e.creditCard.length()
                + e.city.length() + e.state.length();
        e.extra = nextExtra(random, currentSize, AVG_PERSON_BYTE_SIZE);
    }

    // ---- AuctionGenerator

    static long lastBase0AuctionId(long eventId) {
        long epoch = eventId / TOTAL_PROPORTION;
        long offset = eventId % TOTAL_PROPORTION;
        if (offset < PERSON_PROPORTION) {
            epoch--;
            offset = AUCTION_PROPORTION - 1;
        } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
            offset = AUCTION_PROPORTION - 1;
        } else {
            offset -= PERSON_PROPORTION;
        }
        return epoch * AUCTION_PROPORTION + offset;
    }

    static long nextBase0AuctionId(long eventId, Random random) {
        long minAuction = Math.max(lastBase0AuctionId(eventId) - NUM_IN_FLIGHT_AUCTIONS, 0);
        long maxAuction = lastBase0AuctionId(eventId);
        return minAuction + nextLong(random, maxAuction - minAuction + 1 + AUCTION_ID_LEAD);
    }

    void auction(long count, long eventId, Random random, long timestamp, Event e) {
        e.type = Event.AUCTION;
        e.id = lastBase0AuctionId(eventId) + FIRST_AUCTION_ID;
        long seller;
        if (random.nextInt(HOT_SELLERS_RATIO_CONF) > 0) {
            seller = (lastBase0PersonId(eventId) / HOT_SELLER_RATIO) * HOT_SELLER_RATIO;
        } else {
            seller = nextBase0PersonId(eventId, random);
        }
        e.seller = seller + FIRST_PERSON_ID;
        e.category = FIRST_CATEGORY_ID + random.nextInt(NUM_CATEGORIES);
        e.initialBid = nextPrice(random);
        e.expires = timestamp + nextAuctionLengthMs(count, random, timestamp);
        e.itemName = nextString(random, 20, ' ');
        e.description = nextString(random, 100, ' ');
        e.reserve = e.initialBid + nextPrice(random);
        e.dateTime = timestamp;
        int currentSize = 8 + e.itemName.length() + e.description.length() + 8 + 8 + 8 + 8 + 8;
        e.extra = nextExtra(random, currentSize, AVG_AUCTION_BYTE_SIZE);
    }

    long nextAuctionLengthMs(long count, Random random, long timestamp) {
        long currentEventNumber = nextAdjustedEventNumber(count);
        long numEventsForAuctions = ((long) NUM_IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION) / AUCTION_PROPORTION;
        long futureAuction = timestampForEvent(currentEventNumber + numEventsForAuctions);
        long horizonMs = futureAuction - timestamp;
        return 1L + nextLong(random, Math.max(horizonMs * 2, 1L));
    }

    // ---- BidGenerator

    static void bid(long eventId, Random random, long timestamp, Event e) {
        e.type = Event.BID;
        long auction;
        if (random.nextInt(HOT_AUCTION_RATIO_CONF) > 0) {
            auction = (lastBase0AuctionId(eventId) / HOT_AUCTION_RATIO) * HOT_AUCTION_RATIO;
        } else {
            auction = nextBase0AuctionId(eventId, random);
        }
        e.auction = auction + FIRST_AUCTION_ID;
        long bidder;
        if (random.nextInt(HOT_BIDDERS_RATIO_CONF) > 0) {
            bidder = (lastBase0PersonId(eventId) / HOT_BIDDER_RATIO) * HOT_BIDDER_RATIO + 1;
        } else {
            bidder = nextBase0PersonId(eventId, random);
        }
        // Nexmark adds FIRST_PERSON_ID twice to a bidder (once before and once after drawing the
        // channel): kept, so that bidders equal Nexmark's.
        bidder += FIRST_PERSON_ID;
        e.price = nextPrice(random);
        if (random.nextInt(HOT_CHANNELS_RATIO) > 0) {
            int i = random.nextInt(HOT_CHANNELS.length);
            e.channel = HOT_CHANNELS[i];
            e.url = HOT_URLS[i];
        } else {
            int c = random.nextInt(CHANNELS_NUMBER);
            e.channel = CHANNEL_NAMES[c];
            e.url = CHANNEL_URLS[c];
        }
        e.bidder = bidder + FIRST_PERSON_ID;
        e.dateTime = timestamp;
        e.extra = nextExtra(random, 8 + 8 + 8 + 8, AVG_BID_BYTE_SIZE);
    }

    static String baseUrl(Random random) {
        return "https://www.nexmark.com/" + nextString(random, 5, '_') + '/' + nextString(random, 5, '_') + '/'
                + nextString(random, 5, '_') + '/' + "item.htm?query=1";
    }

    // ---- PriceGenerator, LongGenerator, StringsGenerator

    static long nextPrice(Random random) {
        return Math.round(Math.pow(10.0, random.nextDouble() * 6.0) * 100.0);
    }

    static long nextLong(Random random, long n) {
        if (n < Integer.MAX_VALUE) {
            return random.nextInt((int) n);
        }
        return Math.abs(random.nextLong() % n);
    }

    static String nextString(Random random, int maxLength, char special) {
        int len = MIN_STRING_LENGTH + random.nextInt(maxLength - MIN_STRING_LENGTH);
        StringBuilder sb = new StringBuilder(len);
        while (len-- > 0) {
            if (random.nextInt(13) == 0) {
                sb.append(special);
            } else {
                sb.append((char) ('a' + random.nextInt(26)));
            }
        }
        return sb.toString().trim();
    }

    /**
     * Nexmark's nextExactString with java.util.Random: six letters per nextInt(), and, as in
     * Nexmark, a negative draw gives characters below 'a' ('H' to '`', backslash included).
     */
    static String nextExactString(Random random, int length) {
        char[] buf = new char[length];
        int rnd = 0;
        int n = 0;
        for (int i = 0; i < length; i++) {
            if (n == 0) {
                rnd = random.nextInt();
                n = 6;
            }
            buf[i] = (char) ('a' + rnd % 26);
            rnd /= 26;
            n--;
        }
        return new String(buf);
    }

    static String nextExtra(Random random, int currentSize, int desiredAverageSize) {
        if (currentSize > desiredAverageSize) {
            return "";
        }
        desiredAverageSize -= currentSize;
        int delta = (int) Math.round(desiredAverageSize * 0.2);
        int minSize = desiredAverageSize - delta;
        int desiredSize = minSize + (delta == 0 ? 0 : random.nextInt(2 * delta));
        return nextExactString(random, desiredSize);
    }
}
