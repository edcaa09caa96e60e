package network

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestBufferPoolRequestBlocksUntilRecycle(t *testing.T) {
	p := NewBufferPool(2, 64)
	a, b := p.TryRequest(), p.TryRequest()
	if a == nil || b == nil {
		t.Fatal("a fresh pool of 2 did not hand out 2 buffers")
	}
	if p.TryRequest() != nil {
		t.Fatal("TryRequest on an empty pool returned a buffer")
	}
	got := make(chan *Buffer)
	go func() {
		buf, err := p.Request(nil)
		if err != nil {
			t.Error(err)
		}
		got <- buf
	}()
	select {
	case <-got:
		t.Fatal("Request returned while the pool was empty")
	case <-time.After(20 * time.Millisecond):
	}
	a.Data = append(a.Data, "dirty"...)
	a.Kind = KindWatermark
	a.Recycle()
	select {
	case buf := <-got:
		if buf != a {
			t.Fatal("Request returned a buffer other than the recycled one")
		}
		if len(buf.Data) != 0 || buf.Kind != KindData || cap(buf.Data) != 64 {
			t.Fatalf("recycled buffer not reset: len %d kind %v cap %d", len(buf.Data), buf.Kind, cap(buf.Data))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Request still blocked after Recycle")
	}
	if p.InUse() != 2 || p.MaxInUse() != 2 {
		t.Fatalf("InUse %d MaxInUse %d, want 2 and 2", p.InUse(), p.MaxInUse())
	}
}

func TestBufferPoolRequestCanceled(t *testing.T) {
	p := NewBufferPool(1, 64)
	held := p.TryRequest()
	cancel := make(chan struct{})
	errc := make(chan error)
	go func() {
		_, err := p.Request(cancel)
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("Request returned %v before cancel", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(cancel)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrCanceled) {
			t.Fatalf("Request after cancel: %v, want ErrCanceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Request did not return after cancel")
	}
	// A free buffer wins over a closed cancel channel on the fast path.
	held.Recycle()
	if b, err := p.Request(cancel); err != nil || b == nil {
		t.Fatalf("Request with a free buffer and closed cancel: %v, %v", b, err)
	}
}

func TestBufferPoolBounded(t *testing.T) {
	const capacity, workers, rounds = 4, 8, 500
	p := NewBufferPool(capacity, 64)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				b, err := p.Request(nil)
				if err != nil {
					t.Error(err)
					return
				}
				if n := p.InUse(); n > capacity {
					t.Errorf("InUse %d > capacity %d", n, capacity)
				}
				b.Data = append(b.Data, byte(w), byte(i))
				if (w+i)%3 == 0 {
					time.Sleep(time.Microsecond)
				}
				b.Recycle()
			}
		})
	}
	wg.Wait()
	if p.MaxInUse() > p.Capacity() {
		t.Fatalf("MaxInUse %d > Capacity %d", p.MaxInUse(), p.Capacity())
	}
	if p.MaxInUse() < 1 || p.InUse() != 0 {
		t.Fatalf("MaxInUse %d InUse %d after all recycled", p.MaxInUse(), p.InUse())
	}
	// Every buffer is back, distinct.
	seen := map[*Buffer]bool{}
	for range capacity {
		b := p.TryRequest()
		if b == nil || seen[b] {
			t.Fatalf("pool lost or duplicated a buffer: %p", b)
		}
		seen[b] = true
	}
	if p.TryRequest() != nil {
		t.Fatal("pool grew")
	}
}

func TestBufferPoolDoubleRecyclePanics(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, takeOut int
	}{
		{"pool full afterwards", 1, 1},
		{"pool not full afterwards", 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewBufferPool(tc.n, 64)
			var bufs []*Buffer
			for range tc.takeOut {
				bufs = append(bufs, p.TryRequest())
			}
			bufs[0].Recycle()
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("recycling a buffer twice did not panic")
					}
				}()
				bufs[0].Recycle()
			}()
			// The pool still holds each buffer once.
			seen := map[*Buffer]bool{}
			for {
				b := p.TryRequest()
				if b == nil {
					break
				}
				if seen[b] {
					t.Fatal("the pool hands out the same buffer twice")
				}
				seen[b] = true
			}
			if want := tc.n - tc.takeOut + 1; len(seen) != want {
				t.Fatalf("pool holds %d buffers, want %d", len(seen), want)
			}
		})
	}
}

func TestNewBufferPoolTooSmallPanics(t *testing.T) {
	for _, c := range [][2]int{{0, 64}, {1, 63}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewBufferPool(%d, %d) did not panic", c[0], c[1])
				}
			}()
			NewBufferPool(c[0], c[1])
		}()
	}
}

func TestBudgetReservesMinimumsAndLendsTheRest(t *testing.T) {
	const size = 1024
	b := NewBudget(10 * size)
	p1, err := b.NewPool(4, 8, size)
	if err != nil {
		t.Fatal(err)
	}
	if b.Used() != 4*size || p1.Allocated() != 0 {
		t.Fatalf("after reserving 4: used %d, allocated %d; want %d and 0 (lazy)", b.Used(), p1.Allocated(), 4*size)
	}
	// A second pool whose minimum does not fit fails, naming sizes.
	if _, err := b.NewPool(7, 7, size); err == nil {
		t.Fatal("a pool whose minimum exceeds the free budget was created")
	} else {
		var be *BudgetError
		if !errors.As(err, &be) || be.Need != 7*size || be.Available != 6*size || be.Capacity != 10*size {
			t.Fatalf("error %v, want a BudgetError need 7 KiB, available 6 KiB of 10 KiB", err)
		}
		if got := err.Error(); got != "network memory exhausted: a result partition needs 7 KiB, 6 KiB of 10 KiB are free" {
			t.Fatalf("message %q", got)
		}
	}
	p2, err := b.NewPool(2, 8, size)
	if err != nil {
		t.Fatal(err)
	}
	// used: 4 + 2 reserved. p1 may take its 4, then 4 more borrowed from the
	// 4 free; p2 gets only its reserved 2 after that.
	var out []*Buffer
	for range 8 {
		if x := p1.TryRequest(); x != nil {
			out = append(out, x)
		}
	}
	if len(out) != 8 || b.Used() != 10*size {
		t.Fatalf("p1 got %d buffers, budget used %d; want 8 and all", len(out), b.Used())
	}
	if x, y := p2.TryRequest(), p2.TryRequest(); x == nil || y == nil {
		t.Fatal("p2 did not get its reserved minimum while the budget was lent out")
	}
	if p2.TryRequest() != nil {
		t.Fatal("p2 got a buffer beyond its minimum from an exhausted budget")
	}
	for _, x := range out {
		x.Recycle()
	}
	p1.Close()
	if b.Used() != 2*size {
		t.Fatalf("after p1 closed: used %d, want p2's %d", b.Used(), 2*size)
	}
	p1.Close() // idempotent
	if b.Used() != 2*size {
		t.Fatalf("second Close released again: used %d", b.Used())
	}
	if p2.TryRequest() == nil {
		t.Fatal("p2 could not borrow after p1 gave its buffers back")
	}
}

func TestBufferPoolAllocatesLazily(t *testing.T) {
	p := NewBufferPool(1000, 32<<10)
	a := p.TryRequest()
	a.Recycle()
	b := p.TryRequest()
	if b != a || p.Allocated() != 1 {
		t.Fatalf("allocated %d buffers for one at a time (reused: %v)", p.Allocated(), a == b)
	}
}

func TestEventsNeedNoPool(t *testing.T) {
	w, e := NewWatermark(-5), NewEndOfPartition()
	if !w.IsEvent() || !e.IsEvent() || w.Watermark() != -5 {
		t.Fatalf("events: %v %v %d", w.IsEvent(), e.IsEvent(), w.Watermark())
	}
	w.Recycle() // no pool: nothing happens, twice too
	w.Recycle()
}

func TestPoolAvailabilityAndOverdraft(t *testing.T) {
	p := NewBufferPool(2, 64)
	notify := make(chan struct{}, 1)
	p.NotifyOn(notify)
	a, b := p.TryRequest(), p.TryRequest()
	if p.Available() || p.TryRequest() != nil {
		t.Fatal("an exhausted pool reports available")
	}
	var over []*Buffer
	for range MaxOverdraft {
		x := p.RequestOverdraft()
		if x == nil {
			t.Fatal("no overdraft buffer")
		}
		over = append(over, x)
	}
	if p.RequestOverdraft() != nil || p.Allocated() != 2+MaxOverdraft {
		t.Fatalf("overdraft beyond its bound: allocated %d", p.Allocated())
	}
	a.Recycle()
	select {
	case <-notify:
	default:
		t.Fatal("recycling did not signal")
	}
	if p.Available() || p.Allocated() != 1+MaxOverdraft {
		t.Fatalf("a buffer recycled while the pool is overdrawn was pooled: allocated %d", p.Allocated())
	}
	for _, x := range over[1:] {
		x.Recycle()
	}
	if p.Available() {
		t.Fatal("available with max buffers still out")
	}
	over[0].Recycle()
	if !p.Available() || p.Allocated() != 2 {
		t.Fatalf("back to max: available %v, allocated %d", p.Available(), p.Allocated())
	}
	// The overdraft is lent again once it has been paid back.
	c := p.TryRequest()
	if x := p.RequestOverdraft(); x == nil {
		t.Fatal("overdraft not lent again after it was paid back")
	} else {
		x.Recycle()
	}
	b.Recycle()
	c.Recycle()
	if p.InUse() != 0 || p.MaxInUse() > p.Capacity() {
		t.Fatalf("in use %d, max %d of capacity %d", p.InUse(), p.MaxInUse(), p.Capacity())
	}
}

// TestOverdraftReusesRetiredBuffers: a buffer lent beyond max and paid back
// is lent again at the next overdraft rather than allocated anew (a
// producer whose consumer is slower overdraws again and again), and a
// closed pool keeps none.
func TestOverdraftReusesRetiredBuffers(t *testing.T) {
	p := NewBufferPool(1, 1<<10)
	a := p.TryRequest()
	x := p.RequestOverdraft()
	x.Recycle() // pays the overdraft back: retired, not pooled
	if p.Available() {
		t.Fatal("a repaid overdraft buffer was pooled beyond max")
	}
	if y := p.RequestOverdraft(); y != x {
		t.Fatalf("the next overdraft got a new buffer %p, want the retired %p", y, x)
	} else {
		y.Recycle()
	}
	allocs := testing.AllocsPerRun(100, func() { p.RequestOverdraft().Recycle() })
	if allocs != 0 {
		t.Errorf("%.1f allocations per overdraft once warm, want 0", allocs)
	}
	if len(p.retired) != 1 {
		t.Fatalf("%d retired buffers, want the 1 repaid", len(p.retired))
	}
	p.Close()
	a.Recycle()
	if len(p.retired) != 0 {
		t.Errorf("a closed pool keeps %d retired buffers", len(p.retired))
	}
}

// TestRecycleResetsPerUseFields: a pooled buffer that carried a priority
// barrier (a receiver's, across processes) comes back from the pool as a
// plain buffer: not priority, nothing overtaken, so a later aligned
// barrier in it is recognized as one.
func TestRecycleResetsPerUseFields(t *testing.T) {
	p := NewBufferPool(1, 64)
	b, err := p.Request(nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Kind, b.priority, b.Overtaken = KindBarrier, true, 3
	b.Recycle()
	b, err = p.Request(nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.priority || b.Overtaken != 0 || b.Kind != KindData || len(b.Data) != 0 {
		t.Fatalf("a recycled buffer came back with priority %t, overtaken %d, kind %v, %d bytes", b.priority, b.Overtaken, b.Kind, len(b.Data))
	}
}
