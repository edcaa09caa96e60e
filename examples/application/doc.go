// Application runs a user's own program as a Weir cluster of processes in
// application mode: the same binary is started once as the JobManager and
// once per TaskManager, every process builds the same job, and the
// JobManager alone supplies the arguments (a TaskManager started with
// other arguments re-executes itself with the JobManager's).
//
// The job counts "key<TAB>value" lines per key in a keyed function with
// ValueState, and writes "key<TAB>count<TAB>sum" lines exactly once into
// an output directory (committed at each checkpoint). Kill a TaskManager
// while it runs: the job restarts from its last checkpoint on the
// TaskManagers left (or on one started later), and the output stays
// exactly once.
//
//	go build -o app .
//	WEIR_ROLE=jobmanager ./app -input in.tsv -output out -checkpoints ckpt &
//	WEIR_ROLE=taskmanager WEIR_TASKMANAGER_ID=tm-1 ./app &
//	WEIR_ROLE=taskmanager WEIR_TASKMANAGER_ID=tm-2 ./app &
//	wait
//
// With WEIR_PROPERTIES naming an HA service (etcd or Kubernetes) it may be
// started as several JobManagers that elect a leader; the TaskManagers are
// given all of them (WEIR_JOBMANAGER=a,b). See docs/deployment.md, "An
// application with high availability".
//
// Without WEIR_ROLE the program runs the job on an embedded cluster in one
// process, as any Weir program does. The paths must be ones every process
// can reach (on one machine, any; on several, a shared file system). See
// docs/deployment.md, "Application mode".
//
// This directory is a Go module of its own. To start a project from it,
// copy the directory and delete the replace line of go.mod, which builds it
// against the Weir of this repository.
package main
