// Package query holds the Nexmark queries q0 to q22 on Weir's DataStream
// API, with the meaning of Nexmark's SQL text (github.com/nexmark/nexmark,
// nexmark-flink/src/main/resources/queries), and what runs them: Run builds
// a query over the generated events (or a file written by `weir nexmark
// generate`) on the embedded cluster and measures it; results go to a
// discard sink, or as JSON lines keyed by the columns of the query's result
// table, the final table for queries whose results update earlier ones.
//
// Each query lives in its own file (q0.go, ...) and registers itself in
// init; its test compares its results with an independent in-memory
// computation of the SQL over the same events (docs/nexmark.md).
package query
