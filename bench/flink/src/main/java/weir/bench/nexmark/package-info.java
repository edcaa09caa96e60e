/**
 * The Nexmark side of Weir's Flink peer (issue 13): a port of Nexmark's event generator
 * ({@link weir.bench.nexmark.NexmarkGenerator}), the 'weir-nexmark' table source that feeds it to
 * Flink's SQL ({@link weir.bench.nexmark.NexmarkTableFactory}, {@link weir.bench.nexmark.NexmarkSource}),
 * the 'weir-dump' sink that writes a query's final result table ({@link weir.bench.nexmark.DumpTableFactory}),
 * and the driver that runs Nexmark's query files on a local MiniCluster and reports events per
 * CPU second ({@link weir.bench.nexmark.NexmarkBench}). See docs/nexmark-flink-peer.md.
 */
package weir.bench.nexmark;
