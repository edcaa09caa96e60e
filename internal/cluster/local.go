package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/weirhq/weir/internal/jobmanager"
	"github.com/weirhq/weir/internal/network"
	"github.com/weirhq/weir/internal/rest"
	"github.com/weirhq/weir/internal/taskmanager"
)

// Config configures a local cluster.
type Config struct {
	// TaskManagers is the number of TaskManagers (default 1).
	TaskManagers int
	// SlotsPerTaskManager is the slots of each TaskManager (default 1).
	SlotsPerTaskManager int
	// RESTAddr is where the REST API listens ("" for no REST API;
	// "127.0.0.1:0" for any free port).
	RESTAddr string
	// Version is reported by the REST API.
	Version string
	Logger  *slog.Logger
}

// Local is a running local cluster.
type Local struct {
	JM      *jobmanager.JobManager
	Shuffle *network.LocalShuffle
	tms     []*taskmanager.TaskManager
	rest    *rest.Server
	logger  *slog.Logger

	closeOnce sync.Once
}

// Start starts a local cluster.
func Start(cfg Config) (*Local, error) {
	if cfg.TaskManagers < 1 {
		cfg.TaskManagers = 1
	}
	if cfg.SlotsPerTaskManager < 1 {
		cfg.SlotsPerTaskManager = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Local{JM: jobmanager.New(cfg.Logger), Shuffle: network.NewLocalShuffle(), logger: cfg.Logger}
	for i := range cfg.TaskManagers {
		tm := taskmanager.New(fmt.Sprintf("taskmanager-%d", i), cfg.SlotsPerTaskManager, c.JM, c.Shuffle, cfg.Logger)
		c.tms = append(c.tms, tm)
		c.JM.RegisterTaskManager(tm)
	}
	if cfg.RESTAddr != "" {
		c.rest = rest.NewServer(&view{c: c}, rest.WithVersion(cfg.Version, ""))
		addr, err := c.rest.Start(cfg.RESTAddr)
		if err != nil {
			c.Close(context.Background())
			return nil, fmt.Errorf("starting the REST API on %s: %w", cfg.RESTAddr, err)
		}
		cfg.Logger.Info("REST API listening", "address", "http://"+addr)
	}
	return c, nil
}

// RESTAddr is the address the REST API listens on, or "".
func (c *Local) RESTAddr() string {
	if c.rest == nil {
		return ""
	}
	return c.rest.Addr()
}

// Close cancels every job, waits for every task to return and stops the REST API.
func (c *Local) Close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		for _, id := range c.JM.JobIDs() {
			if cerr := c.JM.Cancel(id); cerr != nil && !errors.Is(cerr, jobmanager.ErrJobNotFound) {
				err = cerr
			}
		}
		for _, tm := range c.tms {
			tm.Shutdown()
		}
		if c.rest != nil {
			if serr := c.rest.Shutdown(ctx); serr != nil && err == nil {
				err = serr
			}
		}
	})
	return err
}
