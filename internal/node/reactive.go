package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/rest"
)

// Reactive mode (Flink's scheduler-mode: reactive; docs/high-availability.md,
// "Reactive scaling"): a job runs at the parallelism of every task slot the
// cluster has (slot sharing puts one subtask of each vertex in a slot), up
// to MaxParallelism. When the slots change and stay changed for the
// stabilization timeout, the run is canceled and the job runs again at the
// new parallelism from its latest completed checkpoint, under the same id:
// the restore redistributes keyed state by key group, so the output stays
// exactly once. It sizes every job to the whole cluster: meant for one job
// per cluster, as Flink offers it in application mode only.

// DefaultStabilization is how long a change of the cluster's slots must
// last before a reactive job rescales (Flink's
// jobmanager.adaptive-scheduler.resource-stabilization-timeout is 10 s; a
// TaskManager of Weir registers in milliseconds).
const DefaultStabilization = 2 * time.Second

// ReactiveConfig configures reactive mode.
type ReactiveConfig struct {
	// Stabilization is how long the slots must stay changed before the job
	// rescales (0: DefaultStabilization).
	Stabilization time.Duration
	// MaxParallelism bounds the parallelism (0: 128, the key groups of a
	// job that sets none).
	MaxParallelism int
	// Poll is how often the slots are counted (0: 100ms).
	Poll time.Duration
}

// Reactive wraps run: each run of a job gets Submission.Parallelism, the
// cluster's slots; a lasting change of the slots cancels it and runs the
// job again from its latest checkpoint (Submission.Refresh, else "latest").
func Reactive(run RunJob, cfg ReactiveConfig, logger *slog.Logger) RunJob {
	if cfg.Stabilization == 0 {
		cfg.Stabilization = DefaultStabilization
	}
	if cfg.MaxParallelism == 0 {
		cfg.MaxParallelism = 128
	}
	if cfg.Poll == 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	return func(ctx context.Context, c *cluster.Local, sub Submission) error {
		slots := func() int {
			n := 0
			for _, tm := range c.JM.TaskManagers() {
				n += tm.Slots
			}
			return min(n, cfg.MaxParallelism)
		}
		// Wait for a first slot: a job of parallelism 0 cannot run.
		p := slots()
		for p == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(cfg.Poll):
			}
			p = slots()
		}
		if sub.JobID == "" {
			sub.JobID = rest.NewJobID() // every run of the job under one id
		}
		for {
			sub.Parallelism = p
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- run(rctx, c, sub) }()
			next, err := watchSlots(rctx, done, slots, p, cfg)
			cancel()
			if next == 0 {
				if err != nil && ctx.Err() == nil {
					logger.Warn("reactive mode: the job's run ended with an error", "job", sub.JobID, "parallelism", p, "err", err)
				}
				return err
			}
			<-done // the run is canceled: its tasks and lineage are released
			logger.Info("reactive mode: rescaling the job to the cluster's slots", "job", sub.JobID, "from", p, "to", next)
			p = next
			sub.Submitted = nil // told once, by the first run
			if sub.Refresh != nil {
				sub.ResumeFrom, sub.Fencing = sub.Refresh()
			} else {
				sub.ResumeFrom = "latest"
			}
		}
	}
}

// watchSlots waits until the run ends (next 0, its error) or the slots
// differ from p for the stabilization timeout (next: the new count).
func watchSlots(ctx context.Context, done <-chan error, slots func() int, p int, cfg ReactiveConfig) (next int, err error) {
	t := time.NewTicker(cfg.Poll)
	defer t.Stop()
	var since time.Time
	for {
		select {
		case err := <-done:
			return 0, err
		case <-ctx.Done():
			return 0, <-done
		case <-t.C:
		}
		n := slots()
		switch {
		case n == p || n == 0:
			since = time.Time{} // back, or nothing to run on: the run waits for slots
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= cfg.Stabilization:
			return n, nil
		}
	}
}
