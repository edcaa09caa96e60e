package cli

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/testseed"
)

// TestClusterUnalignedAcrossTaskManagers: keyed-count with unaligned
// checkpoints at parallelism 2 on two one-slot TaskManager processes, so
// its keyBy crosses them and its barriers overtake data on the data plane
// (decision 21 of docs/distributed-runtime.md), with small buffers sent at
// once and an unthrottled source, so the channels back up (backpressure).
// One TaskManager is killed with SIGKILL after a seeded number of
// checkpoints; the job fails over onto a spare and resumes from a
// checkpoint. Checkpoints complete, some of them with
// channel state (the in-flight buffers the barriers overtook), and every
// count is committed exactly once.
func TestClusterUnalignedAcrossTaskManagers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JobManager and three TaskManager processes")
	}
	r := testseed.Rand(t, 365)
	dir := t.TempDir()
	input, output, cp := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "out"), filepath.Join(dir, "cp")
	n := 400000 + r.IntN(50000)
	want := writeKeyedInput(t, input, r, n, 40)
	jm, rpcAddr, _ := startJobManager(t)
	tms := []*proc{startTaskManager(t, os.Args[0], rpcAddr, "tm-a", 1), startTaskManager(t, os.Args[0], rpcAddr, "tm-b", 1)}
	spare := startTaskManager(t, os.Args[0], rpcAddr, "tm-c", 1)
	client := startWeir(t, "", "run", "keyed-count", "--jobmanager", rpcAddr, "--input", input, "--output", output,
		"--checkpoint-dir", cp, "--parallelism", "2", "--checkpoint-interval", "50ms", "--unaligned", "--retained", "1000",
		"--rate", "0", "--buffer-size", "1kb", "--buffer-timeout", "0")
	// The kill comes after a seeded number of completed checkpoints, so
	// it finds the job running on a machine of any speed.
	victim, after := r.IntN(2), 2+r.IntN(5)
	start := time.Now()
	for strings.Count(jm.stderr.String(), "checkpoint completed") < after {
		if time.Since(start) > 60*time.Second || client.cmd.ProcessState != nil {
			t.Fatalf("%d checkpoints did not complete within %v; client:\n%s\nJobManager:\n%s", after, time.Since(start), client.stderr.String(), jm.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tms[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	name := []string{"tm-a", "tm-b"}[victim]
	t.Logf("%d lines; killed %s after %d checkpoints, %v after submitting", n, name, after, time.Since(start))
	code, took, _ := client.wait(t, 120*time.Second)
	if code != ExitOK {
		t.Fatalf("the client exited %d after %v; stderr:\n%s\nJobManager:\n%s\nsurvivor:\n%s\nspare:\n%s", code, took, client.stderr.String(),
			jm.stderr.String(), tms[1-victim].stderr.String(), spare.stderr.String())
	}
	if got := committedLines(t, output); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d exactly once (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	log := jm.stderr.String()
	if !strings.Contains(log, "TaskManager "+name+" lost") || !strings.Contains(log, "job restarted") {
		t.Errorf("the JobManager did not log %s's loss and the job's restart; stderr:\n%s", name, log)
	}
	completed := strings.Count(log, "checkpoint completed")
	if completed < 3 {
		t.Errorf("the job completed %d checkpoints, want several; JobManager:\n%s", completed, log)
	}
	// Channel state: the objects of input and output channels that
	// checkpoints wrote (all are retained), and in them the buffers of
	// channels between the processes. Each process runs the same subtask
	// of every vertex, so a keyBy channel crosses them when its producer
	// (an input channel's index) or its consumer (an output channel's
	// subpartition) is not the subtask itself.
	var files, remote, local int
	restored := "none"
	if m := regexp.MustCompile(`job restarted.*from="checkpoint (\d+)"`).FindStringSubmatch(log); m != nil {
		restored = "chk-" + m[1]
	}
	restoredState := 0
	filepath.WalkDir(cp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "-channels") {
			return nil
		}
		r, l, err := channelStateFrames(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		files, remote, local = files+1, remote+r, local+l
		if filepath.Base(filepath.Dir(path)) == restored {
			restoredState += r + l
		}
		return nil
	})
	t.Logf("%d checkpoints completed in %v; %d subtask snapshots hold channel state: %d buffers of channels between the TaskManagers, %d within one; "+
		"the job restarted from %s, holding %d buffers of channel state", completed, took, files, remote, local, restored, restoredState)
	if remote == 0 {
		t.Errorf("no checkpoint stored channel state of a channel between the TaskManagers: no barrier overtook data on the data plane")
	}
	for _, p := range []*proc{tms[1-victim], spare, jm} {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code, _, _ := p.wait(t, 30*time.Second); code != ExitOK && code != ExitCanceled {
			t.Errorf("%v exited %d on SIGTERM; stderr:\n%s", p.cmd.Args[1:], code, p.stderr.String())
		}
	}
}

// channelStateFrames counts the buffers of a checkpoint's channel-state
// object (task.writeChannelState's frames: index, channel, length, big
// endian, then the bytes) of channels whose other end is another subtask
// than the object's own (remote), and of the others.
func channelStateFrames(path string) (remote, local int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	name := filepath.Base(path)
	output := strings.HasSuffix(name, "-output-channels")
	name = strings.TrimSuffix(strings.TrimSuffix(name, "-output-channels"), "-input-channels")
	subtask, err := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	if err != nil {
		return 0, 0, fmt.Errorf("no subtask in the name: %w", err)
	}
	for len(b) > 0 {
		if len(b) < 12 {
			return remote, local, fmt.Errorf("a frame cut short")
		}
		index, channel, n := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
		if uint32(len(b)-12) < n {
			return remote, local, fmt.Errorf("a frame of %d bytes cut short", n)
		}
		b = b[12+n:]
		other := int(index)
		if output {
			other = int(channel)
		}
		if other != subtask {
			remote++
		} else {
			local++
		}
	}
	return remote, local, nil
}
