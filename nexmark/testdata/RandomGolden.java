// Prints java.util.Random sequences (and Nexmark's price formula) for the Go
// port's test to compare with: run as `java RandomGolden.java PRICES`.
import java.util.Random;

public class RandomGolden {
  public static void main(String[] args) {
    long[] seeds = {0L, 1L, -1L, 2L, 42L, 1000003L, 123456789012345L, Long.MIN_VALUE, Long.MAX_VALUE};
    int[] bounds = {1, 2, 3, 4, 5, 6, 9, 10, 11, 13, 26, 100, 1000, 1666, 10000, 1 << 30, 1073741825, Integer.MAX_VALUE};
    StringBuilder sb = new StringBuilder();
    for (long seed : seeds) {
      Random r = new Random(seed);
      for (int i = 0; i < 60; i++) {
        sb.append("seed ").append(seed).append(" i ").append(i).append(' ');
        switch (i % 4) {
          case 0: sb.append("nextInt(").append(bounds[i % bounds.length]).append(") ").append(r.nextInt(bounds[i % bounds.length])); break;
          case 1: sb.append("nextInt() ").append(r.nextInt()); break;
          case 2: sb.append("nextLong() ").append(r.nextLong()); break;
          default: sb.append("nextDouble() ").append(Long.toHexString(Double.doubleToRawLongBits(r.nextDouble())));
        }
        sb.append('\n');
      }
    }
    int prices = Integer.parseInt(args[0]);
    for (int s = 0; s < prices; s++) {
      Random r = new Random(s);
      sb.append("price ").append(s).append(' ').append(Math.round(Math.pow(10.0, r.nextDouble() * 6.0) * 100.0)).append('\n');
    }
    System.out.print(sb);
  }
}
