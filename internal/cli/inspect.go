package cli

import (
	"fmt"
	"io"
)

// runSavepointInspect runs weir savepoint inspect PATH.
//
// NOT BUILT: a stub that answers a usage error. The engineer who owns
// restore semantics (issue 10) replaces this file; the name and signature
// are the contract with the command dispatch in cli.go.
func runSavepointInspect(args []string, stdout, stderr io.Writer) int {
	_ = stdout
	fmt.Fprintln(stderr, "weir: savepoint inspect is not built yet")
	return ExitUsage
}
