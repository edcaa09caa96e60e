package query_test

// floorTo rounds ts down to a multiple of size (toward minus infinity).
func floorTo(ts, size int64) int64 {
	if r := ts % size; r < 0 {
		return ts - r - size
	} else {
		return ts - r
	}
}
