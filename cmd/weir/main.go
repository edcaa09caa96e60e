// Command weir runs Weir's built-in jobs on the embedded local cluster and
// talks to a running cluster's REST API. See `weir help`.
package main

import (
	"os"

	"github.com/weirhq/weir/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
