// Package cli implements the weir command: `version`, `run <job>` for the
// built-in jobs on the embedded local cluster, `bench`, `list`, `cancel`,
// `savepoint` and `stop` against a cluster's REST API, `nexmark generate`
// and `nexmark run`, and `help [<command>]`. cmd/weir is only its main.
//
// It owns what every command shares: exit codes (0 success, 1 failure, 2
// usage error, 130 canceled), signals (SIGINT, SIGTERM, SIGHUP and SIGQUIT
// cancel the command; a second one exits at once), per-command help cut
// from the one usage text (help.go), flags that refuse empty values and
// accept old names as aliases (flags.go), the REST API address forms, and
// the refusal of outputs that are inputs (paths.go). The benchmark jobs a
// cluster runs (`weir bench shuffle|latency --jobmanager`) are programs
// "bench <name>" of the cluster's processes (bench_cluster.go).
package cli
