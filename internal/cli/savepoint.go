package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/rest"
)

// savepointTimeout bounds how long weir savepoint and weir stop wait for
// the savepoint (Flink's client waits without bound by default; a bound
// with a message naming the request beats a hung terminal).
const savepointTimeout = 30 * time.Minute

// savepointPoll is how often the status of a request is asked.
const savepointPoll = 100 * time.Millisecond

// savepointFlags parses the flags of weir savepoint and weir stop: --dir,
// --format, --address (alias --rest-address) and, for stop, --drain.
type savepointFlags struct {
	dir, format string
	drain       bool
}

func savepointClient(name string, args []string, stop bool) (*rest.Client, string, savepointFlags, error) {
	var f savepointFlags
	fs := newFlagSet(name)
	fs.StringVar(&f.dir, "dir", "", "")
	fs.StringVar(&f.format, "format", "canonical", "")
	var restAddr string
	fs.StringVar(&restAddr, "rest-address", "", "")
	if stop {
		fs.BoolVar(&f.drain, "drain", false, "")
	}
	c, pos, err := client(fs, args)
	if err != nil {
		return nil, "", f, err
	}
	if restAddr != "" {
		if setFlag(fs, "address") {
			return nil, "", f, usagef("give --address or --rest-address, not both")
		}
		if err := checkAddress("rest-address", restAddr); err != nil {
			return nil, "", f, err
		}
		c = rest.NewClient(restAddr, nil)
	}
	if len(pos) != 1 || !rest.ValidJobID(strings.TrimSpace(pos[0])) {
		return nil, "", f, usagef("%s needs one job ID (32 lowercase hex digits; see weir list)", name)
	}
	switch strings.ToLower(f.format) {
	case "canonical", "native":
	default:
		return nil, "", f, usagef("--format must be canonical or native, got %q", f.format)
	}
	// A relative path means this command's directory, not the job's
	// (which would resolve it in its own).
	if f.dir != "" && !strings.Contains(f.dir, "://") && !filepath.IsAbs(f.dir) {
		abs, err := filepath.Abs(f.dir)
		if err != nil {
			return nil, "", f, fmt.Errorf("--dir %q: %w", f.dir, err)
		}
		f.dir = abs
	}
	return c, strings.TrimSpace(pos[0]), f, nil
}

// takeSavepoint runs weir savepoint <job-id> [--dir URL]: it triggers a
// savepoint, waits for it and prints its path. weir savepoint inspect is
// runSavepointInspect's (inspect.go).
func takeSavepoint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, id, f, err := savepointClient("savepoint", args, false)
	if err != nil {
		return err
	}
	rid, err := c.TriggerSavepoint(ctx, id, rest.SavepointTriggerRequest{TargetDirectory: f.dir, FormatType: strings.ToUpper(f.format)})
	if err != nil {
		return fmt.Errorf("triggering a savepoint of job %s: %w", id, err)
	}
	fmt.Fprintf(stderr, "weir: savepoint of job %s requested (request %s); waiting\n", id, rid)
	loc, err := awaitSavepoint(ctx, c, id, rid, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "savepoint completed: %s\n", loc)
	return nil
}

// stopJob runs weir stop <job-id> [--dir URL] [--drain]: stop with a
// savepoint, then print its path.
func stopJob(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, id, f, err := savepointClient("stop", args, true)
	if err != nil {
		return err
	}
	rid, err := c.StopWithSavepoint(ctx, id, rest.StopRequest{TargetDirectory: f.dir, Drain: f.drain, FormatType: strings.ToUpper(f.format)})
	if err != nil {
		return fmt.Errorf("stopping job %s with a savepoint: %w", id, err)
	}
	fmt.Fprintf(stderr, "weir: stop of job %s with a savepoint requested (request %s); waiting\n", id, rid)
	loc, err := awaitSavepoint(ctx, c, id, rid, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "job %s stopped with savepoint: %s\n", id, loc)
	return nil
}

// awaitSavepoint polls a savepoint request until it completes.
func awaitSavepoint(ctx context.Context, c *rest.Client, id, rid string, stderr io.Writer) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, savepointTimeout)
	defer cancel()
	for {
		res, err := c.SavepointStatus(ctx, id, rid)
		if err != nil {
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
				return "", fmt.Errorf("savepoint request %s of job %s did not complete within %v", rid, id, savepointTimeout)
			}
			return "", fmt.Errorf("polling savepoint request %s of job %s: %w", rid, id, err)
		}
		if res.Status.ID == rest.StatusCompleted && res.Operation != nil {
			if fc := res.Operation.FailureCause; fc != nil {
				return "", fmt.Errorf("the savepoint of job %s failed: %s", id, fc.StackTrace)
			}
			return res.Operation.Location, nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				// Ctrl-C ends the waiting, not the request (the CLI's
				// interrupt message speaks of canceling): say so.
				fmt.Fprintf(stderr, "weir: stopped waiting; job %s was not canceled and its request %s may still complete (GET /jobs/%s/savepoints/%s)\n", id, rid, id, rid)
				return "", ctx.Err()
			}
			return "", fmt.Errorf("savepoint request %s of job %s did not complete within %v", rid, id, savepointTimeout)
		case <-time.After(savepointPoll):
		}
	}
}
