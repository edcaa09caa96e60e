// Package flinktest runs Apache Flink's own command-line client, fetched by
// scripts/flink-client, from Go tests, so Weir's REST API is checked with
// Flink's real code. Tests that use it skip (outside CI) or fail (under CI)
// when Java or the fetched client is missing.
package flinktest
