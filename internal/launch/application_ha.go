package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weirhq/weir/internal/cluster"
	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/node"
	"github.com/weirhq/weir/internal/protocol"
	"github.com/weirhq/weir/internal/rpc"
)

// Application mode with high availability (docs/high-availability.md,
// decision 7): the application's program is started as several
// JobManagers, each with its own WEIR_JOBMANAGER and WEIR_REST_ADDRESS and
// the same WEIR_PROPERTIES naming the HA service; they contend
// (node.RunContender), the leader runs the job under an id fixed by the
// cluster id and the application's digest (node.ApplicationJobID), resumed
// from the latest checkpoint the HA store records, and a new leader
// continues it. TaskManagers are given every JobManager
// (WEIR_JOBMANAGER=a,b) and follow whichever leads. When the job ends its
// leader records the end, tells its TaskManagers and resigns; each standby
// then leads, finds the end recorded and ends with it, so every JobManager
// process of the application exits with the job's outcome.

// More environment variables of an application's JobManager.
const (
	// EnvProperties holds cluster settings, one "key: value" (or
	// key=value) per line, as Flink's FLINK_PROPERTIES: the
	// high-availability.* and kubernetes.* settings of `weir jobmanager`.
	EnvProperties = "WEIR_PROPERTIES"
	// EnvRESTAddress is the JobManager's REST address when
	// Config.RESTAddr is empty.
	EnvRESTAddress = "WEIR_REST_ADDRESS"
	// EnvAdvertisedAddress is the host other processes reach this
	// JobManager at, when it listens on every interface.
	EnvAdvertisedAddress = "WEIR_ADVERTISED_ADDRESS"
)

// readHASettings reads the HA settings of EnvProperties; Type "none"
// (the default) is application mode without high availability.
func readHASettings(getenv func(string) string) (ha.Settings, error) {
	kv := map[string]string{}
	for i, line := range strings.Split(getenv(EnvProperties), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if e := strings.Index(line, "="); e >= 0 && (!ok || e < len(k)) {
			k, v, ok = line[:e], line[e+1:], true
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return ha.Settings{}, fmt.Errorf("%s line %d %q: want key: value", EnvProperties, i+1, line)
		}
		if !strings.HasPrefix(k, "high-availability.") && !strings.HasPrefix(k, "kubernetes.") {
			return ha.Settings{}, fmt.Errorf("%s line %d: unknown setting %q (an application's JobManager reads high-availability.* and kubernetes.* there)", EnvProperties, i+1, k)
		}
		kv[k] = v
	}
	s, err := ha.ParseSettings(kv)
	if err != nil {
		return ha.Settings{}, fmt.Errorf("%s: %w", EnvProperties, err)
	}
	return s, nil
}

// startHAApplication is startApplication with high availability: the
// returned Job ends with the application, which may run in this process
// or another of its JobManagers.
func startHAApplication(ctx context.Context, cfg Config, set appSettings, info rpc.AppInfo, s ha.Settings) (*Job, error) {
	restAddr := cfg.RESTAddr
	if restAddr == "" {
		restAddr = os.Getenv(EnvRESTAddress)
	}
	if restAddr == "" {
		return nil, fmt.Errorf("weir: application mode with high availability (%s): the JobManager needs a REST address (Config.RESTAddr or %s): a standby answers there with the leader's address", EnvProperties, EnvRESTAddress)
	}
	var adv ha.LeaderInfo
	var err error
	host := os.Getenv(EnvAdvertisedAddress)
	if adv.RPCAddress, err = node.AdvertisedAt(EnvJobManager, host, cfg.JobManager); err != nil {
		return nil, fmt.Errorf("weir: application mode with high availability: %w", err)
	}
	if adv.RESTAddress, err = node.AdvertisedAt("the REST address", host, restAddr); err != nil {
		return nil, fmt.Errorf("weir: application mode with high availability: %w", err)
	}
	svc, err := node.OpenHA(ctx, s, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("weir: application mode with high availability (%s): %w", s.Type, err)
	}
	app := rpc.NewApplication(node.BuildID(), info)
	id := node.ApplicationJobID(s.ClusterID, info.Digest)
	canceled := cfg.Canceled
	if canceled == nil {
		canceled = errors.New("canceled")
	}
	contend, stop := context.WithCancel(context.WithoutCancel(ctx))
	j := &Job{id: id, started: time.Now(), done: make(chan struct{}), stop: stop}
	var mu sync.Mutex // guards the fields of j the runs set
	ended := false
	build := cfg
	build.Role, build.OnSubmit, build.OnEnd = "", nil, nil
	run := func(ctx context.Context, c *cluster.Local, sub node.Submission) error {
		r, err := Start(OnCluster(ctx, c, Submission{Program: sub.Program, Args: sub.Args, JobID: sub.JobID, ResumeFrom: sub.ResumeFrom, Fencing: sub.Fencing}), build)
		if err != nil {
			return err
		}
		<-r.done
		mu.Lock()
		j.status, j.restoredFrom, j.restoredURL, j.checkpoints = r.status, r.restoredFrom, r.restoredURL, r.checkpoints
		mu.Unlock()
		return r.err
	}
	cfg.Logger.Info("application JobManager contending", "job", cfg.Name, "id", id, "ha", s.Type, "cluster", s.ClusterID,
		"rpc", adv.RPCAddress, "rest", adv.RESTAddress, "fingerprint", info.Fingerprint, "digest", info.Digest)
	ccfg := node.ContenderConfig{
		JobManager: node.JobManagerConfig{RPCAddress: cfg.JobManager, RESTAddress: restAddr, HeartbeatInterval: set.hbInterval,
			HeartbeatTimeout: set.hbTimeout, Application: app, Version: Version, Logger: cfg.Logger},
		Service: svc, Advertised: adv,
		Outcome: func(err error) string {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				return string(protocol.JobFinished)
			case j.status != "" && j.status.Terminal():
				return string(j.status)
			}
			return string(protocol.JobFailed)
		},
		Application: &node.ContenderApplication{JobID: id, Program: cfg.Name, Args: info.Args, Fingerprint: info.Fingerprint, Digest: info.Digest, Run: run,
			Ended: func(status string, err error) {
				if status == string(protocol.JobCanceled) && err != nil {
					err = fmt.Errorf("%w: %v", canceled, err)
				}
				mu.Lock()
				j.status, j.err, ended = protocol.JobState(status), err, true
				mu.Unlock()
				app.Finish(rpc.AppEnd{JobID: id, Status: status, Err: err})
				app.Drain(drainFollowers)
			}},
	}
	go func() {
		err := node.RunContender(contend, ccfg)
		svc.Close()
		mu.Lock()
		if !ended {
			// Stopped (Job.Cancel, ctx, a signal) or failed before the
			// application ended: the job goes on under the next leader.
			j.status = protocol.JobCanceled
			j.err = errors.Join(err, fmt.Errorf("%w: this JobManager stopped; job %s goes on under the application's next leader", canceled, id))
		}
		mu.Unlock()
		if cfg.OnEnd != nil {
			cfg.OnEnd()
		}
		close(j.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-j.done:
		}
	}()
	if cfg.OnSubmit != nil {
		cfg.OnSubmit(j)
	}
	return j, nil
}
