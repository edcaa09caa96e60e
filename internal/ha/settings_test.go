package ha

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		kv   map[string]string
		want Settings
		err  string
	}{
		{name: "defaults", kv: nil,
			want: Settings{Type: "none", ClusterID: "default", LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}},
		{name: "etcd", kv: map[string]string{"high-availability.type": "etcd", "high-availability.etcd.endpoints": "a:2379, b:2379,", "high-availability.cluster-id": "c-1", "other.key": "x"},
			want: Settings{Type: "etcd", ClusterID: "c-1", EtcdEndpoints: []string{"a:2379", "b:2379"}, LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}},
		{name: "flink's kubernetes names", kv: map[string]string{"high-availability.type": "KUBERNETES", "high-availability.kubernetes.leader-election.lease-duration": "15s",
			"high-availability.kubernetes.leader-election.renew-deadline": "10s", "high-availability.kubernetes.leader-election.retry-period": "5s", "kubernetes.namespace": "flink"},
			want: Settings{Type: "kubernetes", ClusterID: "default", Namespace: "flink", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 5 * time.Second}},
		{name: "kubernetes outside a pod", kv: map[string]string{"high-availability.type": "kubernetes", "high-availability.kubernetes.api-server": "https://127.0.0.1:6443",
			"high-availability.kubernetes.token-file": "/t", "high-availability.kubernetes.ca-file": "/ca.crt"},
			want: Settings{Type: "kubernetes", ClusterID: "default", APIServer: "https://127.0.0.1:6443", TokenFile: "/t", CAFile: "/ca.crt",
				LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}},
		{name: "unknown type", kv: map[string]string{"high-availability.type": "consul"}, err: `high-availability.type "consul": want none, etcd or kubernetes`},
		{name: "zookeeper", kv: map[string]string{"high-availability.type": "zookeeper"}, err: "zookeeper is not supported"},
		{name: "unknown key", kv: map[string]string{"high-availability.etcd.endpoint": "a:1"}, err: "unknown setting high-availability.etcd.endpoint"},
		{name: "etcd without endpoints", kv: map[string]string{"high-availability.type": "etcd"}, err: "needs high-availability.etcd.endpoints"},
		{name: "renew not below lease", kv: map[string]string{"high-availability.leader-election.lease-duration": "4s"}, err: "renew-deadline 4s must be below the lease duration 4s"},
		{name: "retry not below renew", kv: map[string]string{"high-availability.leader-election.retry-period": "5s"}, err: "retry-period 5s must be below the renew deadline 4s"},
		{name: "bad duration", kv: map[string]string{"high-availability.leader-election.retry-period": "-1s"}, err: `retry-period "-1s": want a positive duration`},
		{name: "bad cluster id", kv: map[string]string{"high-availability.cluster-id": "A/b"}, err: "cluster-id \"A/b\": want lower-case"},
		{name: "api server alone", kv: map[string]string{"high-availability.type": "kubernetes", "high-availability.kubernetes.api-server": "https://x"}, err: "go together"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSettings(c.kv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g, w := strings.Join(got.EtcdEndpoints, ","), strings.Join(c.want.EtcdEndpoints, ","); g != w {
				t.Fatalf("endpoints %q, want %q", g, w)
			}
			got.EtcdEndpoints, c.want.EtcdEndpoints = nil, nil
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestCheckKey(t *testing.T) {
	for _, k := range []string{"jobs/abc", "checkpoints/j-1/latest", "a.b_c"} {
		if err := CheckKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", "a b", "é", strings.Repeat("a", 201)} {
		if err := CheckKey(k); err == nil {
			t.Errorf("%q accepted", k)
		}
	}
}
