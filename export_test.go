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
// operators opened after it hold elements back (operator.RunEnder)
// whatever the size of their state, so that tests with a few keys run that
// path, until restore is called.
func HoldWindowElements() (restore func()) {
	old := holdMinEntries
	holdMinEntries = 0
	return func() { holdMinEntries = old }
}
