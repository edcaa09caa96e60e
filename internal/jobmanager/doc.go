// Package jobmanager schedules jobs onto TaskManager slots and follows them to
// the end: it expands a JobGraph into subtask executions, deploys them through
// TaskManagerGateway, tracks their states and turns those into the job's state.
//
// The decisions (which tasks to cancel, when a job is terminal, what its
// failure cause is) are made by the pure state machine in jobstate.go; the
// JobManager type is the driver around it. TaskManagers are reached only
// through the gateway interfaces in gateway.go, so a later multi-process mode
// can put RPC behind them.
package jobmanager
