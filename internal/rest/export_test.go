package rest

// OperatorMetric exposes operatorMetric to the tests of package rest_test,
// labels as name/value pairs.
func OperatorMetric(id string) (op, name string, labels [][2]string, isOp bool) {
	op, name, ls, isOp := operatorMetric(id)
	for _, l := range ls {
		labels = append(labels, [2]string{l.name, l.value})
	}
	return op, name, labels, isOp
}
