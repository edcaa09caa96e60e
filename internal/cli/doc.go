// Package cli implements the weir command: `version`, `run <job>` for the
// built-in jobs on the embedded local cluster, `bench`, `list`, `cancel`,
// `savepoint` and `stop` against a cluster's REST API, and `nexmark
// generate` (Nexmark's events as JSON lines). cmd/weir is only its main.
package cli
