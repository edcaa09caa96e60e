package rest_test

import (
	"github.com/weirhq/weir/internal/protocol"
	"reflect"
	"testing"

	"github.com/weirhq/weir/internal/rest"
)

func TestJobID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := rest.NewJobID()
		if !rest.ValidJobID(id) {
			t.Fatalf("NewJobID() = %q is not valid", id)
		}
		if seen[id] {
			t.Fatalf("NewJobID() repeated %q", id)
		}
		seen[id] = true
	}
	for id, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef":  true,
		"0123456789ABCDEF0123456789abcdef":  false, // one spelling only
		"0123456789abcdef0123456789abcde":   false,
		"0123456789abcdef0123456789abcdef0": false,
		"0123456789abcdef0123456789abcdeg":  false,
		"":                                  false,
		"0123456789abcdef-123456789abcdef":  false,
	} {
		if got := rest.ValidJobID(id); got != want {
			t.Errorf("ValidJobID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestAggregateVertexState(t *testing.T) {
	const (
		cr = protocol.TaskCreated
		sc = protocol.TaskScheduled
		de = protocol.TaskDeploying
		ru = protocol.TaskRunning
		fi = protocol.TaskFinished
		cg = protocol.TaskCanceling
		cd = protocol.TaskCanceled
		fa = protocol.TaskFailed
	)
	cases := []struct {
		states []protocol.TaskState
		want   protocol.TaskState
	}{
		{nil, cr},
		{[]protocol.TaskState{cr, sc, de}, cr},
		{[]protocol.TaskState{ru, de}, ru},
		{[]protocol.TaskState{fi, fi}, fi},
		{[]protocol.TaskState{fi, ru}, ru},
		{[]protocol.TaskState{fi, de}, ru}, // some finished, not all: RUNNING, as Flink
		{[]protocol.TaskState{ru, cd}, cd},
		{[]protocol.TaskState{cd, cg}, cg},
		{[]protocol.TaskState{cg, fa, ru}, fa},
	}
	for _, tc := range cases {
		if got := rest.AggregateVertexState(rest.CountStates(tc.states), len(tc.states)); got != tc.want {
			t.Errorf("AggregateVertexState(%v) = %s, want %s", tc.states, got, tc.want)
		}
	}
}

func TestCountStatesAndTaskCounts(t *testing.T) {
	m := rest.CountStates([]protocol.TaskState{protocol.TaskRunning, protocol.TaskRunning, protocol.TaskFailed})
	if len(m) != len(protocol.TaskStates) || m[protocol.TaskRunning] != 2 || m[protocol.TaskFailed] != 1 || m[protocol.TaskCreated] != 0 {
		t.Errorf("CountStates = %v", m)
	}
	want := rest.TaskCounts{Total: 3, Running: 2, Failed: 1}
	if got := rest.TaskCountsOf(m); got != want {
		t.Errorf("TaskCountsOf = %+v, want %+v", got, want)
	}
}

func TestOverviewOf(t *testing.T) {
	got := rest.OverviewOf(runningJob())
	want := rest.JobOverview{
		ID: runningID, Name: "wordcount", State: protocol.JobRunning, JobType: rest.JobTypeStreaming,
		StartTime: 1_700_000_000_000, EndTime: -1, Duration: 5000,
		LastModification: 1_700_000_000_000,
		Tasks:            rest.TaskCounts{Total: 4, Running: 3, Deploying: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OverviewOf = %+v, want %+v", got, want)
	}
}

func TestJobStateTerminal(t *testing.T) {
	for s, want := range map[protocol.JobState]bool{
		protocol.JobCreated: false, protocol.JobRunning: false, protocol.JobFailing: false, protocol.JobFailed: true,
		protocol.JobCancelling: false, protocol.JobCanceled: true, protocol.JobFinished: true,
		protocol.JobRestarting: false, protocol.JobSuspended: false,
	} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
}
