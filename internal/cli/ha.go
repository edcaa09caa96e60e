package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/node"
)

// haSettings takes jobmanager's high-availability.* and kubernetes.*
// settings out of props (docs/high-availability.md, decision 2).
func haSettings(props propsFlag) (rest propsFlag, _ ha.Settings, _ error) {
	kv := map[string]string{}
	for _, p := range props {
		if strings.HasPrefix(p[0], "high-availability.") || strings.HasPrefix(p[0], "kubernetes.") {
			kv[p[0]] = p[1]
			continue
		}
		rest = append(rest, p)
	}
	s, err := ha.ParseSettings(kv)
	if err != nil {
		return nil, ha.Settings{}, usagef("-D %v", err)
	}
	return rest, s, nil
}

// contend runs a JobManager with high availability: a contender that leads
// or stands by (node.RunContender) until ctx ends.
func contend(ctx context.Context, jc node.JobManagerConfig, s ha.Settings, advertised string, stdout io.Writer, logger *slog.Logger) error {
	if jc.RESTAddress == "" {
		return usagef("with high availability a JobManager needs its REST API (--rest-address): a standby answers there with the leader's address")
	}
	var info ha.LeaderInfo
	var err error
	if info.RPCAddress, err = node.AdvertisedAt("--rpc-address", advertised, jc.RPCAddress); err != nil {
		return usagef("%v", err)
	}
	if info.RESTAddress, err = node.AdvertisedAt("--rest-address", advertised, jc.RESTAddress); err != nil {
		return usagef("%v", err)
	}
	svc, err := node.OpenHA(ctx, s, logger)
	if err != nil {
		return fmt.Errorf("high availability (%s): %w", s.Type, err)
	}
	defer svc.Close()
	// The ready line: scripts and tests read the addresses here; whether
	// this process leads shows in its log and its REST API.
	fmt.Fprintf(stdout, "JobManager contending (%s, cluster %s): rpc %s rest %s\n", s.Type, s.ClusterID, info.RPCAddress, info.RESTAddress)
	return node.RunContender(ctx, node.ContenderConfig{JobManager: jc, Service: svc, Advertised: info, Outcome: func(err error) string {
		switch outcome(err) {
		case "canceled":
			return "CANCELED"
		case "usage", "failed":
			if err != nil {
				return "FAILED"
			}
		}
		return "FINISHED"
	}})
}
