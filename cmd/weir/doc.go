// Command weir runs Weir's built-in jobs on the embedded local cluster and
// talks to a running cluster's REST API. See `weir help`.
package main
