package rest_test

import (
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
		cr = rest.TaskCreated
		sc = rest.TaskScheduled
		de = rest.TaskDeploying
		ru = rest.TaskRunning
		fi = rest.TaskFinished
		cg = rest.TaskCanceling
		cd = rest.TaskCanceled
		fa = rest.TaskFailed
	)
	cases := []struct {
		states []rest.TaskState
		want   rest.TaskState
	}{
		{nil, cr},
		{[]rest.TaskState{cr, sc, de}, cr},
		{[]rest.TaskState{ru, de}, ru},
		{[]rest.TaskState{fi, fi}, fi},
		{[]rest.TaskState{fi, ru}, ru},
		{[]rest.TaskState{fi, de}, ru}, // some finished, not all: RUNNING, as Flink
		{[]rest.TaskState{ru, cd}, cd},
		{[]rest.TaskState{cd, cg}, cg},
		{[]rest.TaskState{cg, fa, ru}, fa},
	}
	for _, tc := range cases {
		if got := rest.AggregateVertexState(rest.CountStates(tc.states), len(tc.states)); got != tc.want {
			t.Errorf("AggregateVertexState(%v) = %s, want %s", tc.states, got, tc.want)
		}
	}
}

func TestCountStatesAndTaskCounts(t *testing.T) {
	m := rest.CountStates([]rest.TaskState{rest.TaskRunning, rest.TaskRunning, rest.TaskFailed})
	if len(m) != len(rest.TaskStates) || m[rest.TaskRunning] != 2 || m[rest.TaskFailed] != 1 || m[rest.TaskCreated] != 0 {
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
		ID: runningID, Name: "wordcount", State: rest.JobRunning, JobType: rest.JobTypeStreaming,
		StartTime: 1_700_000_000_000, EndTime: -1, Duration: 5000,
		LastModification: 1_700_000_000_000,
		Tasks:            rest.TaskCounts{Total: 4, Running: 3, Deploying: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OverviewOf = %+v, want %+v", got, want)
	}
}

func TestJobStateTerminal(t *testing.T) {
	for s, want := range map[rest.JobState]bool{
		rest.JobCreated: false, rest.JobRunning: false, rest.JobFailing: false, rest.JobFailed: true,
		rest.JobCancelling: false, rest.JobCanceled: true, rest.JobFinished: true,
		rest.JobRestarting: false, rest.JobSuspended: false,
	} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v", s, !want)
		}
	}
}
