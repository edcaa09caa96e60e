package tuple

import "testing"

func TestOf(t *testing.T) {
	p := Of2(int64(1), "a")
	if p.F0 != 1 || p.F1 != "a" {
		t.Fatalf("Of2 = %+v", p)
	}
	if p != (T2[int64, string]{1, "a"}) {
		t.Fatalf("T2 should be comparable and equal by fields")
	}
	q := Of3(1, 2.5, true)
	if q.F0 != 1 || q.F1 != 2.5 || !q.F2 {
		t.Fatalf("Of3 = %+v", q)
	}
}
