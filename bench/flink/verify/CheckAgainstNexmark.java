import com.github.nexmark.flink.NexmarkConfiguration;
import com.github.nexmark.flink.generator.GeneratorConfig;
import com.github.nexmark.flink.generator.NexmarkGenerator;
import com.github.nexmark.flink.model.*;
import weir.bench.nexmark.Event;

/**
 * Compares NexmarkGenerator with Nexmark's own generator classes (see verify-generator.sh): every
 * field of every event, URLs up to the random part Nexmark draws unseeded. Exits 1 on a difference.
 */
public class CheckAgainstNexmark {
  public static void main(String[] a) {
    long n = Long.parseLong(a[0]); int rate = Integer.parseInt(a[1]); int p = Integer.parseInt(a[2]);
    NexmarkConfiguration conf = new NexmarkConfiguration();
    conf.firstEventRate = rate; conf.nextEventRate = rate; conf.numEventGenerators = p;
    GeneratorConfig gc = new GeneratorConfig(conf, 1_700_000_000_000L, 1, n, 1);
    weir.bench.nexmark.NexmarkGenerator[] mine = weir.bench.nexmark.NexmarkGenerator.split(1_700_000_000_000L, n, rate, p);
    long bad = 0, checked = 0, urlsHot = 0;
    int si = 0;
    for (GeneratorConfig sub : gc.split(p)) {
      NexmarkGenerator g = new NexmarkGenerator(sub);
      Event e = new Event();
      long i = 0;
      while (g.hasNext()) {
        NexmarkGenerator.NextEvent ne = g.nextEvent();
        mine[si].event(i++, e);
        String want, got;
        com.github.nexmark.flink.model.Event x = ne.event;
        if (x.newPerson != null) { Person q = x.newPerson;
          want = "P " + q.id + "|" + q.name + "|" + q.emailAddress + "|" + q.creditCard + "|" + q.city + "|" + q.state + "|" + q.dateTime.toEpochMilli() + "|" + q.extra;
          got = "P " + e.id + "|" + e.name + "|" + e.emailAddress + "|" + e.creditCard + "|" + e.city + "|" + e.state + "|" + e.dateTime + "|" + e.extra;
        } else if (x.newAuction != null) { Auction q = x.newAuction;
          want = "A " + q.id + "|" + q.itemName + "|" + q.description + "|" + q.initialBid + "|" + q.reserve + "|" + q.dateTime.toEpochMilli() + "|" + q.expires.toEpochMilli() + "|" + q.seller + "|" + q.category + "|" + q.extra;
          got = "A " + e.id + "|" + e.itemName + "|" + e.description + "|" + e.initialBid + "|" + e.reserve + "|" + e.dateTime + "|" + e.expires + "|" + e.seller + "|" + e.category + "|" + e.extra;
        } else { Bid q = x.bid;
          // url: Nexmark draws channel URLs from unseeded randoms; compared in structure only.
          want = "B " + q.auction + "|" + q.bidder + "|" + q.price + "|" + q.channel + "|" + q.dateTime.toEpochMilli() + "|" + q.extra + "|" + q.url.replaceAll("com/[^?]*\\?", "com/X?").replaceAll("&channel_id=-?[0-9]+$", "");
          got = "B " + e.auction + "|" + e.bidder + "|" + e.price + "|" + e.channel + "|" + e.dateTime + "|" + e.extra + "|" + e.url.replaceAll("com/[^?]*\\?", "com/X?").replaceAll("&channel_id=-?[0-9]+$", "");
        }
        if (x.bid != null && e.channel.startsWith("channel-") && e.url.contains("&channel_id=")) {
          String id = Integer.toString(Math.abs(Integer.reverse(Integer.parseInt(e.channel.substring(8)))));
          if (!e.url.endsWith("&channel_id=" + id)) { bad++; System.out.println("bad channel_id in " + e.url + " of " + e.channel); }
        }
        checked++;
        if (!want.equals(got)) { if (bad++ < 3) { System.out.println("want " + want + "\ngot  " + got); } }
      }
      si++;
    }
    System.out.println("checked " + checked + " events, " + bad + " differ");
    if (bad > 0) System.exit(1);
  }
}
