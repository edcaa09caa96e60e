package weir

// ForceGeneralWindowOp makes windows declared after it use the general
// window operator (windowOp) even where the sliced one applies, until the
// returned function restores the previous choice. Tests compare the two.
func ForceGeneralWindowOp(force bool) (restore func()) {
	old := forceGeneralWindowOp
	forceGeneralWindowOp = force
	return func() { forceGeneralWindowOp = old }
}

// SlicedOpsOpened is how many sliced window operators have opened.
func SlicedOpsOpened() int64 { return slicedOpsOpened.Load() }

// HoldWindowElements makes sliced window operators and keyed process
// operators opened after it hold elements back (operator.RunEnder) from a
// state of from entries on (0: from the start), so that tests with a few
// keys run that path and the switch to it, until restore is called.
func HoldWindowElements(from int) (restore func()) {
	old := holdMinEntries
	holdMinEntries = from
	return func() { holdMinEntries = old }
}

// NetworkBuffers reports the job's network memory in bytes while it runs:
// the most that was ever out of its buffer pools at once (summed over
// pools), what the pools have allocated so far (memory follows the data in
// flight), and what they may grow to. maxInUse never exceeds capacity: that
// is the bound on buffered data.
func (j *Job) NetworkBuffers() (maxInUse, allocated, capacity int64) { return j.l.NetworkBuffers() }

// Config returns the environment's configuration with defaults applied.
func (e *Environment) Config() Config { return e.cfg }

// CrashTaskManager crashes TaskManager id ("taskmanager-<n>") of the job's
// embedded cluster and tells the JobManager it is lost with cause.
func (j *Job) CrashTaskManager(id string, cause error) error { return j.l.CrashTaskManager(id, cause) }
