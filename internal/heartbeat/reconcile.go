package heartbeat

// Deployed is an execution the JobManager deployed to one TaskManager. The
// JobManager keeps the entry from sending the Deployment until the
// TaskManager has reported the execution's terminal state (or is lost), even
// after deciding the execution's end itself: a cancel may still be in
// flight.
type Deployed[E, A comparable] struct {
	Exec  E
	Alloc A
	// Seq is the session seq of the Deployment message.
	Seq uint64
	// Terminal: the JobManager holds the execution ended (it was told so,
	// or decided it: failed, cancelled with the cancel perhaps in flight).
	Terminal bool
}

// Reported is an execution a TaskManager's heartbeat says it has.
type Reported[E, A comparable] struct {
	Exec  E
	Alloc A
	// Terminal: the TaskManager reports it in a terminal state.
	Terminal bool
}

// Reconciliation is what one heartbeat reveals, each list without
// duplicates and in the order of its input.
type Reconciliation[E comparable] struct {
	// Cancel: executions the TaskManager runs (not terminal) that the
	// JobManager never deployed there under that allocation (stale
	// deployments of an earlier session or attempt): send CancelTask.
	Cancel []E
	// Missing: executions the TaskManager has processed the deployment of
	// (Seq <= processed), the JobManager holds running, and the heartbeat
	// does not report: fail them with MissingReason.
	Missing []E
}

// Reconcile compares what the JobManager deployed to a TaskManager with what
// its heartbeat reports, as Flink's DefaultExecutionDeploymentReconciler
// does (decision 10). processed is the last JobManager seq the heartbeat
// reflects. The caller passes the JobManager's state as of processing this
// heartbeat, in session order: the TaskManager's messages before the
// heartbeat (terminal states) are already applied, so nothing in flight
// either way is flagged:
//   - a deployment with Seq > processed has not reached the TaskManager;
//   - an execution the JobManager ended itself stays in deployed (Terminal)
//     until the TaskManager reports it ended, so a cancel in flight is not
//     sent again;
//   - an execution the TaskManager ended was reported ended before the
//     heartbeat, so the JobManager holds it Terminal.
func Reconcile[E, A comparable](deployed []Deployed[E, A], reported []Reported[E, A], processed uint64) Reconciliation[E] {
	type key struct {
		e E
		a A
	}
	known := make(map[key]struct{}, len(deployed))
	for _, d := range deployed {
		known[key{d.Exec, d.Alloc}] = struct{}{}
	}
	var r Reconciliation[E]
	present := make(map[key]struct{}, len(reported))
	cancelled := map[E]struct{}{}
	for _, x := range reported {
		k := key{x.Exec, x.Alloc}
		present[k] = struct{}{}
		if _, ok := known[k]; ok || x.Terminal {
			continue
		}
		if _, dup := cancelled[x.Exec]; !dup {
			cancelled[x.Exec] = struct{}{}
			r.Cancel = append(r.Cancel, x.Exec)
		}
	}
	missing := map[E]struct{}{}
	for _, d := range deployed {
		if d.Terminal || d.Seq > processed {
			continue
		}
		if _, ok := present[key{d.Exec, d.Alloc}]; ok {
			continue
		}
		if _, dup := missing[d.Exec]; !dup {
			missing[d.Exec] = struct{}{}
			r.Missing = append(r.Missing, d.Exec)
		}
	}
	return r
}

// MissingReason is the failure text of an execution Reconcile reports
// missing on TaskManager tm.
func MissingReason(tm string) string {
	return "missing on TaskManager " + tm + ": its heartbeat no longer reports the execution"
}

// Unheld is the TaskManager's half of reconciliation (decision 10): the
// executions it runs (not terminal) under an allocation the JobManager's
// HeartbeatReply does not list in held, each once, in input order. They
// belong to an attempt the JobManager has ended; cancel them. The reply
// follows every Deployment the JobManager sent before it on the ordered
// session, so an allocation is missing from it only once released.
func Unheld[E, A comparable](running []Reported[E, A], held []A) []E {
	h := make(map[A]struct{}, len(held))
	for _, a := range held {
		h[a] = struct{}{}
	}
	var out []E
	seen := map[E]struct{}{}
	for _, r := range running {
		if _, ok := h[r.Alloc]; ok || r.Terminal {
			continue
		}
		if _, dup := seen[r.Exec]; !dup {
			seen[r.Exec] = struct{}{}
			out = append(out, r.Exec)
		}
	}
	return out
}
