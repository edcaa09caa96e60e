package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weirhq/weir/internal/checkpoint/inspect"
)

const inspectUsage = `Usage: weir savepoint inspect PATH [--json]

Says what a savepoint or checkpoint holds, per operator (UID, name, stable ID,
parallelism, max parallelism): keyed state names and kinds, key-group ranges,
keys, entries and bytes per state; operator (list, union, broadcast) state
sizes; source splits and enumerator state; pending sink commits. PATH is a
chk-<n> or savepoint directory or its _metadata file, as a path or URL
(file://, s3://). Keyed state in Pebble's native format is downloaded to a
temporary directory and read with Pebble; its counts are Pebble records.

Exit codes: 0 success, 1 unreadable or corrupt input (the message names the
file), 2 usage error.
`

// runSavepointInspect is `weir savepoint inspect PATH [--json]`.
// ctx ends with the command's signals (exit 130).
func runSavepointInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("savepoint inspect")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseArgs(fs, args)
	switch {
	case err == errHelp:
		fmt.Fprint(stdout, inspectUsage)
		return ExitOK
	case err != nil:
		fmt.Fprintf(stderr, "weir: savepoint inspect: %v\n%s", err, inspectUsage)
		return ExitUsage
	case len(pos) != 1 || pos[0] == "":
		fmt.Fprintf(stderr, "weir: savepoint inspect needs exactly one PATH, got %d arguments\n%s", len(pos), inspectUsage)
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	r, err := inspect.Inspect(ctx, pos[0])
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(stderr, "weir: canceled")
		return ExitCanceled
	}
	if err != nil {
		fmt.Fprintf(stderr, "weir: savepoint inspect: %v\n", err)
		return ExitFailed
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = inspect.WriteText(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "weir: savepoint inspect: writing the report: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}
