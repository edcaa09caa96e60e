// A Java transcription of Nexmark's generator (github.com/nexmark/nexmark,
// nexmark-flink: NexmarkGenerator, GeneratorConfig, Person/Auction/Bid/
// Price/Strings/LongGenerator) with each event's java.util.Random seeded
// with its event id (as Nexmark's first version and Apache Beam's Nexmark
// do) and the shared tables from fixed seeds (extra string: 0, URLs: 1),
// printing Weir's JSON lines. Weir's Go generator is compared with it:
//   java NexmarkReference.java EVENTS TPS BASE_TIME OUT_OF_ORDER_GROUP
import java.util.Random;

public class NexmarkReference {
  static final long FIRST_AUCTION_ID = 1000L, FIRST_PERSON_ID = 1000L, FIRST_CATEGORY_ID = 10L;
  static final int PERSON_P = 1, AUCTION_P = 3, BID_P = 46, TOTAL = 50;
  static final int AVG_PERSON = 200, AVG_AUCTION = 500, AVG_BID = 100;
  static final int HOT_AUCTION_RATIO = 2, HOT_SELLERS_RATIO = 4, HOT_BIDDERS_RATIO = 4;
  static final int IN_FLIGHT = 100, ACTIVE_PEOPLE = 1000;
  static final String[] STATES = "AZ,CA,ID,OR,WA,WY".split(",");
  static final String[] CITIES = "Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne".split(",");
  static final String[] FIRST = "Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter".split(",");
  static final String[] LAST = "Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris".split(",");
  static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
  static String EXTRA;
  static String[] HOT_URLS = new String[4];
  static String[] CH = new String[10000], CH_URL = new String[10000];

  static long baseTime, firstEventId = 1, firstEventNumber = 1, oooGroup;
  static double delayUs;

  static String nextString(Random r, int maxLength, char special) {
    int len = 3 + r.nextInt(maxLength - 3);
    StringBuilder sb = new StringBuilder();
    while (len-- > 0) {
      if (r.nextInt(13) == 0) sb.append(special); else sb.append((char) ('a' + r.nextInt(26)));
    }
    return sb.toString().trim();
  }

  static String exactSlow(Random r, int length) {
    StringBuilder sb = new StringBuilder();
    int rnd = 0, n = 0;
    while (length-- > 0) {
      if (n == 0) { rnd = r.nextInt(); n = 6; }
      sb.append((char) ('a' + rnd % 26));
      rnd /= 26;
      n--;
    }
    return sb.toString();
  }

  static String nextExtra(Random r, int cur, int avg) {
    if (cur > avg) return "";
    avg -= cur;
    int delta = (int) Math.round(avg * 0.2);
    int min = avg - delta;
    int size = min + (delta == 0 ? 0 : r.nextInt(2 * delta));
    int off = r.nextInt(EXTRA.length() - size);
    return EXTRA.substring(off, off + size);
  }

  static String baseUrl(Random r) {
    return "https://www.nexmark.com/" + nextString(r, 5, '_') + '/' + nextString(r, 5, '_') + '/' + nextString(r, 5, '_') + '/' + "item.htm?query=1";
  }

  static long nextLong(Random r, long n) {
    if (n < Integer.MAX_VALUE) return r.nextInt((int) n);
    return Math.abs(r.nextLong() % n);
  }

  static long price(Random r) { return Math.round(Math.pow(10.0, r.nextDouble() * 6.0) * 100.0); }

  static long ts(long eventNumber) { return baseTime + (long) (eventNumber * delayUs) / 1000L; }

  static long adjusted(long count) {
    long n = oooGroup, en = firstEventNumber + count;
    return (en / n) * n + (en * 953) % n;
  }

  static long lastPerson(long eventId) {
    long epoch = eventId / TOTAL, offset = eventId % TOTAL;
    if (offset >= PERSON_P) offset = PERSON_P - 1;
    return epoch * PERSON_P + offset;
  }

  static long lastAuction(long eventId) {
    long epoch = eventId / TOTAL, offset = eventId % TOTAL;
    if (offset < PERSON_P) { epoch--; offset = AUCTION_P - 1; }
    else if (offset >= PERSON_P + AUCTION_P) offset = AUCTION_P - 1;
    else offset -= PERSON_P;
    return epoch * AUCTION_P + offset;
  }

  static long nextPerson(long eventId, Random r) {
    long numPeople = lastPerson(eventId) + 1;
    long active = Math.min(numPeople, ACTIVE_PEOPLE);
    long n = nextLong(r, active + 10);
    return numPeople - active + n;
  }

  static long nextAuction(long eventId, Random r) {
    long minA = Math.max(lastAuction(eventId) - IN_FLIGHT, 0);
    long maxA = lastAuction(eventId);
    return minA + nextLong(r, maxA - minA + 1 + 10);
  }

  static StringBuilder out = new StringBuilder();

  static void str(String k, String v) {
    out.append(",\"").append(k).append("\":\"");
    for (char c : v.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    out.append('"');
  }

  static void num(String k, long v) { out.append(",\"").append(k).append("\":").append(v); }

  public static void main(String[] args) {
    long events = Long.parseLong(args[0]);
    delayUs = 1000000.0 / Long.parseLong(args[1]);
    baseTime = Long.parseLong(args[2]);
    oooGroup = Long.parseLong(args[3]);
    EXTRA = exactSlow(new Random(0), 1 << 20);
    Random t = new Random(1);
    for (int i = 0; i < 4; i++) HOT_URLS[i] = baseUrl(t);
    for (int i = 0; i < 10000; i++) {
      String url = baseUrl(t);
      if (t.nextInt(10) > 0) url = url + "&channel_id=" + Math.abs(Integer.reverse(i));
      CH[i] = "channel-" + i;
      CH_URL[i] = url;
    }
    for (long count = 0; count < events; count++) {
      long ts = ts(adjusted(count));
      long id = firstEventId + adjusted(count);
      Random r = new Random(id);
      long rem = id % TOTAL;
      if (rem < PERSON_P) {
        long pid = lastPerson(id) + FIRST_PERSON_ID;
        String name = FIRST[r.nextInt(FIRST.length)] + " " + LAST[r.nextInt(LAST.length)];
        String email = nextString(r, 7, ' ') + "@" + nextString(r, 5, ' ') + ".com";
        StringBuilder cc = new StringBuilder();
        for (int i = 0; i < 4; i++) { if (i > 0) cc.append(' '); cc.append(String.format("%04d", r.nextInt(10000))); }
        String city = CITIES[r.nextInt(CITIES.length)];
        String state = STATES[r.nextInt(STATES.length)];
        int cur = 8 + name.length() + email.length() + cc.length() + city.length() + state.length();
        String extra = nextExtra(r, cur, AVG_PERSON);
        out.append("{\"type\":\"person\"");
        num("id", pid); str("name", name); str("emailAddress", email); str("creditCard", cc.toString());
        str("city", city); str("state", state); num("dateTime", ts); str("extra", extra);
      } else if (rem < PERSON_P + AUCTION_P) {
        long aid = lastAuction(id) + FIRST_AUCTION_ID;
        long seller;
        if (r.nextInt(HOT_SELLERS_RATIO) > 0) seller = (lastPerson(id) / 100) * 100;
        else seller = nextPerson(id, r);
        seller += FIRST_PERSON_ID;
        long category = FIRST_CATEGORY_ID + r.nextInt(5);
        long initialBid = price(r);
        long future = ts(adjusted(count) + (long) IN_FLIGHT * TOTAL / AUCTION_P);
        long expires = ts + 1L + nextLong(r, Math.max((future - ts) * 2, 1L));
        String name = nextString(r, 20, ' ');
        String desc = nextString(r, 100, ' ');
        long reserve = initialBid + price(r);
        int cur = 8 + name.length() + desc.length() + 8 + 8 + 8 + 8 + 8;
        String extra = nextExtra(r, cur, AVG_AUCTION);
        out.append("{\"type\":\"auction\"");
        num("id", aid); str("itemName", name); str("description", desc); num("initialBid", initialBid);
        num("reserve", reserve); num("dateTime", ts); num("expires", expires); num("seller", seller);
        num("category", category); str("extra", extra);
      } else {
        long auction;
        if (r.nextInt(HOT_AUCTION_RATIO) > 0) auction = (lastAuction(id) / 100) * 100;
        else auction = nextAuction(id, r);
        auction += FIRST_AUCTION_ID;
        long bidder;
        if (r.nextInt(HOT_BIDDERS_RATIO) > 0) bidder = (lastPerson(id) / 100) * 100 + 1;
        else bidder = nextPerson(id, r);
        bidder += FIRST_PERSON_ID;
        long price = price(r);
        String channel, url;
        if (r.nextInt(2) > 0) { int i = r.nextInt(4); channel = HOT_CHANNELS[i]; url = HOT_URLS[i]; }
        else { int i = r.nextInt(10000); channel = CH[i]; url = CH_URL[i]; }
        bidder += FIRST_PERSON_ID;
        String extra = nextExtra(r, 32, AVG_BID);
        out.append("{\"type\":\"bid\"");
        num("auction", auction); num("bidder", bidder); num("price", price); str("channel", channel);
        str("url", url); num("dateTime", ts); str("extra", extra);
      }
      out.append("}\n");
      if (out.length() > 1 << 16) { System.out.print(out); out.setLength(0); }
    }
    System.out.print(out);
    System.out.flush();
  }
}
