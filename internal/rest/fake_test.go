package rest_test

import (
	"errors"
	"github.com/weirhq/weir/internal/protocol"
	"sync"

	"github.com/weirhq/weir/internal/rest"
)

// Job ids the fake cluster knows.
const (
	runningID = "0123456789abcdef0123456789abcdef"
	failedID  = "fedcba9876543210fedcba9876543210"
	brokenID  = "00000000000000000000000000000bad" // Cancel fails with an internal error
	unknownID = "11111111111111111111111111111111"
)

// fakeCluster is a Cluster with two fixed jobs: one running (source -> map ->
// sink, two vertices) and one failed. It records Cancel calls.
type fakeCluster struct {
	mu        sync.Mutex // guards cancelled
	cancelled []string
}

var _ rest.Cluster = (*fakeCluster)(nil)

func (f *fakeCluster) Overview() rest.Overview {
	return rest.Overview{
		TaskManagers: 1, SlotsTotal: 4, SlotsAvailable: 2,
		JobsRunning: 1, JobsFailed: 1,
	}
}

func (f *fakeCluster) Jobs() []rest.JobSummary {
	return []rest.JobSummary{
		{ID: runningID, Status: protocol.JobRunning},
		{ID: failedID, Status: protocol.JobFailed},
	}
}

func (f *fakeCluster) Job(id string) (rest.JobDetails, bool) {
	switch id {
	case runningID:
		return runningJob(), true
	case failedID:
		return failedJob(), true
	}
	return rest.JobDetails{}, false
}

func (f *fakeCluster) Exceptions(id string) (rest.JobExceptions, bool) {
	switch id {
	case runningID:
		return rest.JobExceptions{}, true // never failed: lists must still be []
	case failedID:
		return rest.JobExceptions{
			RootException: "java.lang.RuntimeException: boom",
			Timestamp:     1_700_000_009_000,
			AllExceptions: []rest.TaskException{{
				Exception: "boom", Task: "Map -> Sink (2/2)", Location: "localhost:6121",
				Timestamp: 1_700_000_009_000, TaskManagerID: "tm-1",
			}},
			ExceptionHistory: rest.ExceptionHistory{Entries: []rest.ExceptionEntry{{
				ExceptionName: "RuntimeException", Stacktrace: "boom\n\tat map.go:12",
				Timestamp: 1_700_000_009_000, TaskName: "Map -> Sink (2/2)", Location: "localhost:6121",
			}}},
		}, true
	}
	return rest.JobExceptions{}, false
}

func (f *fakeCluster) Cancel(id string) error {
	switch id {
	case runningID, failedID: // the failed one is terminal: accepted anyway
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cancelled = append(f.cancelled, id)
		return nil
	case brokenID:
		return errors.New("mailbox full")
	}
	return rest.ErrJobNotFound
}

func (f *fakeCluster) cancelledIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cancelled...)
}

// fakeWithTMs adds GET /taskmanagers.
type fakeWithTMs struct{ fakeCluster }

func (f *fakeWithTMs) TaskManagers() []rest.TaskManager {
	return []rest.TaskManager{{
		ID: "tm-1", Path: "local://tm-1", DataPort: 6121, JmxPort: -1,
		TimeSinceLastHeartbeat: 1_700_000_010_000, SlotsNumber: 4, FreeSlots: 2,
	}}
}

const (
	srcVertex  = "bc764cd8ddf7a0cff126f51c16239658"
	sinkVertex = "20ba6b65f97481d5570070de90e4e791"
)

func runningJob() rest.JobDetails {
	src := []protocol.TaskState{protocol.TaskRunning, protocol.TaskRunning}
	sink := []protocol.TaskState{protocol.TaskRunning, protocol.TaskDeploying}
	srcCounts, sinkCounts := rest.CountStates(src), rest.CountStates(sink)
	srcState := rest.AggregateVertexState(srcCounts, 2)
	sinkState := rest.AggregateVertexState(sinkCounts, 2)
	return rest.JobDetails{
		ID: runningID, Name: "wordcount", State: protocol.JobRunning,
		StartTime: 1_700_000_000_000, EndTime: -1, Duration: 5000, MaxParallelism: -1,
		// Now left zero: the handler fills it from its clock.
		Timestamps: map[protocol.JobState]int64{
			protocol.JobCreated: 1_699_999_999_000, protocol.JobRunning: 1_700_000_000_000,
		},
		Vertices: []rest.Vertex{
			{
				ID: srcVertex, Name: "Source: words", MaxParallelism: 128, Parallelism: 2,
				Status: srcState, StartTime: 1_700_000_000_100, EndTime: -1, Duration: 4900,
				Tasks: srcCounts,
				Metrics: rest.VertexMetrics{
					WriteBytes: 4096, WriteBytesComplete: true, WriteRecords: 100, WriteRecordsComplete: true,
					ReadBytesComplete: true, ReadRecordsComplete: true,
					AccumulatedBackpressuredTime: 10, AccumulatedIdleTime: 20, AccumulatedBusyTime: 30,
				},
			},
			{
				ID: sinkVertex, Name: "Map -> Sink: print", MaxParallelism: 128, Parallelism: 2,
				Status: sinkState, StartTime: 1_700_000_000_200, EndTime: -1, Duration: 4800,
				Tasks: sinkCounts,
				Metrics: rest.VertexMetrics{
					ReadBytes: 4096, ReadBytesComplete: true, ReadRecords: 100, ReadRecordsComplete: false,
					WriteBytesComplete: true, WriteRecordsComplete: true,
				},
			},
		},
		StatusCounts: rest.CountStates([]protocol.TaskState{srcState, sinkState}),
		Plan: rest.Plan{Nodes: []rest.PlanNode{
			{ID: srcVertex, Parallelism: 2, Operator: "", OperatorStrategy: "", Description: "Source: words"},
			{
				ID: sinkVertex, Parallelism: 2, Description: "Map -> Sink: print",
				Inputs: []rest.PlanInput{{Num: 0, ID: srcVertex, ShipStrategy: "HASH", Exchange: "pipelined_bounded"}},
			},
		}},
	}
}

// failedJob leaves every optional list and map nil, as a lazy Cluster might.
func failedJob() rest.JobDetails {
	return rest.JobDetails{
		ID: failedID, Name: "broken", State: protocol.JobFailed,
		StartTime: 1_700_000_001_000, EndTime: 1_700_000_009_000, Duration: 8000, MaxParallelism: -1,
		Now: 1_700_000_020_000,
		Timestamps: map[protocol.JobState]int64{
			protocol.JobRunning: 1_700_000_001_000, protocol.JobFailed: 1_700_000_009_000,
		},
	}
}
