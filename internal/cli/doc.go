// Package cli implements the weir command: `version`, `run <job>` for the
// built-in jobs on the embedded local cluster, and `list` and `cancel` against
// a cluster's REST API. cmd/weir is only its main.
package cli
