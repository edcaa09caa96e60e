package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/graph"
)

// TestConfigText: the canonical text lists the job's plain settings (nested
// structs by path, maps sorted), leaves out what each process sets for
// itself, and is equal for equal configurations.
func TestConfigText(t *testing.T) {
	cfg := Config{Name: "j", Graph: &graph.JobGraph{Fingerprint: "fp"}, BufferSize: 4096, StateBackend: "pebble",
		Restart:       map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3"},
		Checkpointing: &Checkpointing{Interval: time.Second, Dir: "/c"}, ProcessMemory: 1 << 30, RESTAddr: "x:1",
		StateDir: "/s", Role: RoleJobManager, JobManager: "h:1", OnEnd: func() {}}
	text := configText(cfg)
	for _, want := range []string{"Name=j\n", "BufferSize=4096\n", "StateBackend=pebble\n", "Checkpointing.Interval=1s\n", "Checkpointing.Dir=/c\n",
		"Restart[restart-strategy.fixed-delay.attempts]=3\nRestart[restart-strategy.type]=fixed-delay\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
	for _, not := range []string{"ProcessMemory", "RESTAddr", "StateDir", "Role", "JobManager", "OnEnd", "Graph", "Logger"} {
		if strings.Contains(text, not) {
			t.Errorf("the text names %s, a per-process setting:\n%s", not, text)
		}
	}
	other := cfg
	other.ProcessMemory, other.RESTAddr, other.Role = 2<<30, "y:2", RoleTaskManager
	if configText(other) != text {
		t.Errorf("per-process settings changed the text")
	}
	other.Checkpointing = &Checkpointing{Interval: 2 * time.Second, Dir: "/c"}
	a, b := appInfo(cfg, nil), appInfo(other, nil)
	if a.Digest == b.Digest {
		t.Fatalf("another checkpoint interval, same digest %s", a.Digest)
	}
	if got, want := firstDifference(b.Config, a.Config), `here "Checkpointing.Interval=2s", the JobManager's "Checkpointing.Interval=1s"`; got != want {
		t.Fatalf("first difference %s, want %s", got, want)
	}
}

// TestReadAppSettings: defaults, and each bad variable named.
func TestReadAppSettings(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	s, err := readAppSettings(get)
	if err != nil || s.slots != 1 || s.id != "" || s.hbInterval != 0 {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	env[EnvSlots], env[EnvID], env[EnvHBTimeout] = "4", "tm-9", "2s"
	if s, err = readAppSettings(get); err != nil || s.slots != 4 || s.id != "tm-9" || s.hbTimeout != 2*time.Second {
		t.Fatalf("set: %+v %v", s, err)
	}
	for k, v := range map[string]string{EnvSlots: "0", EnvHBInterval: "soon"} {
		bad := map[string]string{k: v}
		if _, err := readAppSettings(func(k string) string { return bad[k] }); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: got %v, want an error naming it", k, v, err)
		}
	}
	if err := checkRole("worker"); err == nil || !strings.Contains(err.Error(), EnvRole) {
		t.Errorf("role worker: got %v", err)
	}
}

// TestReadHASettings: WEIR_PROPERTIES takes Flink's "key: value" lines (or
// key=value; a value may hold either sign), skips blank and # lines, and
// refuses a line without a key or a setting an application's JobManager
// does not read, naming the line.
func TestReadHASettings(t *testing.T) {
	for _, c := range []struct {
		props, typ, cluster, endpoints, err string
	}{
		{props: "", typ: "none", cluster: "default"},
		{props: "high-availability.type: etcd\nhigh-availability.etcd.endpoints: a:2379,b:2379\n# a comment\n\nhigh-availability.cluster-id=app-1",
			typ: "etcd", cluster: "app-1", endpoints: "a:2379,b:2379"},
		{props: "high-availability.type=etcd\nhigh-availability.etcd.endpoints=http://a:2379", typ: "etcd", cluster: "default", endpoints: "http://a:2379"},
		{props: "high-availability.type: kubernetes\nkubernetes.namespace: flink", typ: "kubernetes", cluster: "default"},
		{props: "high-availability.type etcd", err: `WEIR_PROPERTIES line 1 "high-availability.type etcd": want key: value`},
		{props: "high-availability.type: etcd\nstate.backend: rocksdb", err: `WEIR_PROPERTIES line 2: unknown setting "state.backend"`},
		{props: "high-availability.type: zookeeper", err: "WEIR_PROPERTIES: "},
	} {
		s, err := readHASettings(func(k string) string {
			if k == EnvProperties {
				return c.props
			}
			return ""
		})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one containing %q", c.props, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.props, err)
			continue
		}
		if s.Type != c.typ || s.ClusterID != c.cluster || strings.Join(s.EtcdEndpoints, ",") != c.endpoints {
			t.Errorf("%q: got type %q cluster %q endpoints %q, want %q %q %q", c.props, s.Type, s.ClusterID, s.EtcdEndpoints, c.typ, c.cluster, c.endpoints)
		}
	}
}
