package protocol

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata")

// goldenMessages are fixed values of the membership kinds whose frames are
// kept in testdata/<name>.hex: a change of their encoding shows as a diff
// (and needs Version bumped once frames cross builds).
var goldenMessages = []struct {
	name string
	m    Message
}{
	{"heartbeat", Heartbeat{TaskManager: "tm-1", Seq: 7, Processed: 300,
		Executions: []ExecutionReport{{Exec: ExecutionID{Job: "j", Vertex: 1, Subtask: 2, Attempt: 3},
			Allocation: AllocationID{Epoch: 1, Job: "j", Attempt: 3, Slot: 2}, State: TaskRunning}},
		FreeNetworkMemory: 1 << 30, HeapStateUsed: 4096,
		Stats: []ExecutionStats{{Exec: ExecutionID{Job: "j", Vertex: 1, Subtask: 2, Attempt: 3},
			Stats: TaskStats{RecordsIn: 10, RecordsOut: 9, InputWatermark: -1, OutputWatermark: 5, OutputIdle: true,
				Operators: []OperatorMetric{{Operator: "w", Name: "numLateRecordsDropped", Value: 1}}}}}}},
	{"heartbeat-empty", Heartbeat{TaskManager: "tm-0", Seq: 1}},
	{"heartbeat-reply", HeartbeatReply{Acked: 7, Held: []AllocationID{{Epoch: 1, Job: "j", Attempt: 3, Slot: 0}, {Job: "k", Slot: 1}}}},
	{"heartbeat-reply-none", HeartbeatReply{Acked: 1, Held: []AllocationID{}}},
	{"deregister", Deregister{TaskManager: "tm-1", Reason: "SIGTERM"}},
}

// TestHeartbeatGolden: each membership message encodes to its golden frame
// and the frame decodes to it. go test -run TestHeartbeatGolden -update
// rewrites the files.
func TestHeartbeatGolden(t *testing.T) {
	for _, g := range goldenMessages {
		b, err := Encode(g.m)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		path := filepath.Join("testdata", g.name+".hex")
		got := hex.EncodeToString(b) + "\n"
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to create it)", g.name, err)
		}
		if got != string(want) {
			t.Errorf("%s encodes to\n%s want (%s)\n%s", g.name, got, path, want)
		}
		frame, err := hex.DecodeString(strings.TrimSpace(string(want)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		m, err := Decode(frame)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(m, g.m) {
			t.Errorf("%s decodes to %#v, want %#v", path, m, g.m)
		}
	}
}
