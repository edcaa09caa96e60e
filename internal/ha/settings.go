package ha

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Settings choose and tune a driver: Flink's high-availability.* settings
// (docs/high-availability.md, decision 2).
type Settings struct {
	// Type is high-availability.type: "none", "etcd" or "kubernetes".
	Type string
	// ClusterID is high-availability.cluster-id: contenders of one id
	// elect one leader and share one store.
	ClusterID string
	// StorageDir is high-availability.storageDir: where what the store
	// points to lives (the checkpoint directory's default).
	StorageDir string
	// LeaseDuration, RenewDeadline and RetryPeriod are
	// high-availability.leader-election.{lease-duration,renew-deadline,
	// retry-period}: a term lasts LeaseDuration past its last renewal for
	// the other contenders, its leader gives it up after RenewDeadline
	// without one, and renewals and campaigns retry every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// EtcdEndpoints is high-availability.etcd.endpoints.
	EtcdEndpoints []string
	// Namespace is kubernetes.namespace (empty: the pod's own, else
	// "default"); APIServer and TokenFile are
	// high-availability.kubernetes.api-server and .token-file, for a
	// process outside a pod (inside one, the in-cluster values).
	Namespace, APIServer, TokenFile string
	// CAFile is high-availability.kubernetes.ca-file: the PEM certificates
	// that sign the API server's (empty: inside a pod its ServiceAccount's
	// ca.crt, outside one the system's roots).
	CAFile string
}

// Defaults of the leader election: shorter than Flink's 15 s / 15 s / 5 s,
// which allow for JVM pauses of seconds; Go's are sub-millisecond.
const (
	DefaultLeaseDuration = 6 * time.Second
	DefaultRenewDeadline = 4 * time.Second
	DefaultRetryPeriod   = time.Second
)

// Enabled tells whether a driver is chosen.
func (s Settings) Enabled() bool { return s.Type != "" && s.Type != "none" }

// settingKeys are the keys ParseSettings reads; a key of the
// high-availability. prefix not among them is a mistake it names.
var settingKeys = []string{
	"high-availability.type", "high-availability.cluster-id", "high-availability.storageDir",
	"high-availability.leader-election.lease-duration", "high-availability.leader-election.renew-deadline",
	"high-availability.leader-election.retry-period",
	"high-availability.kubernetes.leader-election.lease-duration", "high-availability.kubernetes.leader-election.renew-deadline",
	"high-availability.kubernetes.leader-election.retry-period",
	"high-availability.etcd.endpoints", "high-availability.kubernetes.api-server", "high-availability.kubernetes.token-file",
	"high-availability.kubernetes.ca-file",
	"kubernetes.namespace",
}

// ParseSettings reads Settings from -D key=value settings (other keys are
// ignored, but an unknown high-availability.* key is an error) and checks
// them: each error names the setting.
func ParseSettings(kv map[string]string) (Settings, error) {
	s := Settings{Type: "none", ClusterID: "default",
		LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first error is the same on every run
	for _, k := range keys {
		if strings.HasPrefix(k, "high-availability.") && !slices.Contains(settingKeys, k) {
			return Settings{}, fmt.Errorf("unknown setting %s (the high-availability settings are %s)", k, strings.Join(settingKeys, ", "))
		}
	}
	if v, ok := kv["high-availability.type"]; ok {
		s.Type = strings.ToLower(strings.TrimSpace(v))
		// Flink's ZooKeeper HA is not offered; say so rather than "unknown".
		switch s.Type {
		case "none", "etcd", "kubernetes":
		case "zookeeper":
			return Settings{}, fmt.Errorf("high-availability.type zookeeper is not supported by Weir: use etcd or kubernetes")
		default:
			return Settings{}, fmt.Errorf("high-availability.type %q: want none, etcd or kubernetes", v)
		}
	}
	if v, ok := kv["high-availability.cluster-id"]; ok {
		if err := checkName(v); err != nil {
			return Settings{}, fmt.Errorf("high-availability.cluster-id %q: %w", v, err)
		}
		s.ClusterID = v
	}
	s.StorageDir = kv["high-availability.storageDir"]
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"lease-duration", &s.LeaseDuration}, {"renew-deadline", &s.RenewDeadline}, {"retry-period", &s.RetryPeriod}} {
		for _, k := range []string{"high-availability.kubernetes.leader-election." + d.name, "high-availability.leader-election." + d.name} {
			v, ok := kv[k]
			if !ok {
				continue
			}
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return Settings{}, fmt.Errorf("%s %q: want a positive duration such as 6s", k, v)
			}
			*d.dst = dur
		}
	}
	if s.RenewDeadline >= s.LeaseDuration {
		return Settings{}, fmt.Errorf("high-availability.leader-election.renew-deadline %v must be below the lease duration %v: a leader must give up its term before another contender may take it",
			s.RenewDeadline, s.LeaseDuration)
	}
	if s.RetryPeriod >= s.RenewDeadline {
		return Settings{}, fmt.Errorf("high-availability.leader-election.retry-period %v must be below the renew deadline %v: a leader must be able to retry a renewal before it gives up",
			s.RetryPeriod, s.RenewDeadline)
	}
	if v := kv["high-availability.etcd.endpoints"]; v != "" {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				s.EtcdEndpoints = append(s.EtcdEndpoints, e)
			}
		}
	}
	if v, ok := kv["kubernetes.namespace"]; ok {
		if err := checkName(v); err != nil {
			return Settings{}, fmt.Errorf("kubernetes.namespace %q: %w", v, err)
		}
		s.Namespace = v
	}
	s.APIServer = kv["high-availability.kubernetes.api-server"]
	s.TokenFile = kv["high-availability.kubernetes.token-file"]
	s.CAFile = kv["high-availability.kubernetes.ca-file"]
	switch s.Type {
	case "etcd":
		if len(s.EtcdEndpoints) == 0 {
			return Settings{}, fmt.Errorf("high-availability.type etcd needs high-availability.etcd.endpoints (host:port of the etcd servers, comma-separated)")
		}
	case "kubernetes":
		if (s.APIServer == "") != (s.TokenFile == "") {
			return Settings{}, fmt.Errorf("high-availability.kubernetes.api-server and high-availability.kubernetes.token-file go together (outside a pod); inside one, set neither")
		}
	}
	return s, nil
}

// checkName accepts a name usable as a Kubernetes object name's part and an
// etcd key segment: lower-case letters, digits and '-', at most 40 bytes,
// starting and ending with a letter or digit.
func checkName(v string) error {
	if v == "" || len(v) > 40 {
		return fmt.Errorf("want 1 to 40 characters")
	}
	for i, r := range v {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !alnum && (r != '-' || i == 0 || i == len(v)-1) {
			return fmt.Errorf("want lower-case letters, digits and inner '-' only")
		}
	}
	return nil
}

// CheckKey reports whether key is a valid store key (see Store).
func CheckKey(key string) error {
	if key == "" || len(key) > 200 || key[0] == '/' || key[len(key)-1] == '/' || strings.Contains(key, "//") {
		return fmt.Errorf("HA store key %q: want 1 to 200 bytes of slash-separated segments", key)
	}
	for _, r := range key {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./", r)
		if !ok {
			return fmt.Errorf("HA store key %q: want letters, digits and -_./ only", key)
		}
	}
	return nil
}
