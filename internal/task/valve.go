package task

import "math"

// valve combines the watermarks of the channels of one logical input: the
// input's watermark is the minimum over channels that have not ended, and it
// only moves forward. It is pure.
type valve struct {
	wms     []int64
	ended   []bool
	current int64
}

func newValve(channels int) *valve {
	v := &valve{wms: make([]int64, channels), ended: make([]bool, channels), current: math.MinInt64}
	for i := range v.wms {
		v.wms[i] = math.MinInt64
	}
	return v
}

// watermark records channel ch's watermark and returns the input's new
// watermark if it advanced.
func (v *valve) watermark(ch int, wm int64) (int64, bool) {
	if wm > v.wms[ch] {
		v.wms[ch] = wm
	}
	return v.advance()
}

// end removes channel ch from the minimum.
func (v *valve) end(ch int) (int64, bool) {
	v.ended[ch] = true
	return v.advance()
}

func (v *valve) advance() (int64, bool) {
	lo, any := int64(math.MaxInt64), false
	for i, w := range v.wms {
		if !v.ended[i] {
			lo, any = min(lo, w), true
		}
	}
	if !any || lo <= v.current {
		return v.current, false
	}
	v.current = lo
	return lo, true
}
