package jobmanager

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/protocol"
)

// TestDeployAttemptBeforeDeployments: on TaskManagers with a data plane,
// each TaskManager holding a slot of an attempt is told where every slot
// runs before any deployment of it reaches that TaskManager; TaskManagers
// without one (the embedded cluster's) are told nothing.
func TestDeployAttemptBeforeDeployments(t *testing.T) {
	for _, data := range []bool{true, false} {
		jm := New(nil)
		g := twoVertexGraph(t, 2)
		var tms []*fakeTM
		for i := range 2 {
			f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
			f.srcOp = g.OperatorIDs[0]
			tms = append(tms, f)
			reg := protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 1 << 30}
			if data {
				reg.DataAddress = fmt.Sprintf("10.0.0.%d:6121", i)
			}
			jm.RegisterTaskManager(reg, f)
		}
		if err := jm.Submit(&JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Restart: noRestart}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the job running", func() bool { return allTasks(jm, "j", protocol.TaskRunning) })
		for _, f := range tms {
			f.mu.Lock()
			calls := slices.Clone(f.calls)
			f.mu.Unlock()
			place := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "place") })
			submit := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "submit") })
			switch {
			case !data && place >= 0:
				t.Errorf("without data planes %s was told %q", f.name, calls[place])
			case data && (place < 0 || submit < place || !strings.HasPrefix(calls[place], "place 2 slots on tm-0@10.0.0.0:6121,tm-1@10.0.0.1:6121")):
				t.Errorf("%s got %q; want the placement of both slots before its first deployment", f.name, calls)
			}
		}
		jm.Cancel("j")
		<-jm.Done("j")
	}
}

// TestRemoteChannelsBookedOnReceivers: on TaskManagers with a data plane,
// a job's input channels from another TaskManager book their buffers on
// the receiving TaskManager besides its result partitions' (decision 20),
// and a job that does not fit is refused naming both; without data planes
// (one shared shuffle) the same job fits.
func TestRemoteChannelsBookedOnReceivers(t *testing.T) {
	for _, data := range []bool{true, false} {
		jm := New(nil)
		g := twoVertexGraph(t, 2)
		// Per TaskManager: one source subtask with 2 output channels (64
		// KiB), and over a data plane one sink subtask with one input
		// channel from the other TaskManager (2 buffers, 64 KiB).
		for i := range 2 {
			f := newFakeTM(jm, fmt.Sprintf("tm-%d", i))
			f.srcOp = g.OperatorIDs[0]
			reg := protocol.TaskManagerRegistration{ID: f.name, Slots: 1, NetworkMemory: 96 << 10}
			if data {
				reg.DataAddress = fmt.Sprintf("10.0.0.%d:6121", i)
			}
			jm.RegisterTaskManager(reg, f)
		}
		err := jm.Submit(&JobSpec{ID: "j", Name: "j", Lineage: "j", Graph: g, Network: testNetwork, Restart: noRestart})
		const want = "not enough network memory: the job needs 128 KiB on TaskManager tm-0 (one 32 KiB buffer for each of its 2 output channels, " +
			"and 2 for each of its 1 input channels from other TaskManagers (taskmanager.network.memory.buffers-per-channel)) but its network memory is 96 KiB"
		switch {
		case data && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("over data planes: got %v, want %q", err, want)
		case !data && err != nil:
			t.Errorf("on a shared shuffle: %v", err)
		}
		if err == nil {
			jm.Cancel("j")
			<-jm.Done("j")
		}
	}
}
