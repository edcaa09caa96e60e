package task

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestMailboxConcurrentPut puts actions from many goroutines while the task
// goroutine runs the mailbox, as the task loop does: every action runs
// exactly once, on the task goroutine, and each producer's actions run in
// the order it put them. Run it with -race: actions touch runs without locks.
func TestMailboxConcurrentPut(t *testing.T) {
	const producers, perProducer = 16, 2000
	m := NewMailbox()
	runs := make([][]int, producers) // touched only by actions, on the task goroutine
	var onTask atomic.Bool           // set while the task goroutine is inside run
	var wrongGoroutine atomic.Int64

	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perProducer {
				m.Put(func() {
					if !onTask.Load() {
						wrongGoroutine.Add(1)
					}
					runs[p] = append(runs[p], k)
				})
			}
		}()
	}
	producersDone := make(chan struct{})
	go func() { wg.Wait(); close(producersDone) }()

	total := 0
	runOnce := func() {
		onTask.Store(true)
		m.run()
		onTask.Store(false)
	}
	for done := false; !done; {
		select {
		case <-m.notify: // the task loop waits here when idle
		case <-producersDone:
			done = true
		}
		runOnce()
	}
	runOnce() // anything put after the last notification was consumed
	for p, got := range runs {
		total += len(got)
		if len(got) != perProducer {
			t.Errorf("producer %d: %d of %d actions ran", p, len(got), perProducer)
		}
		for k, v := range got {
			if v != k {
				t.Fatalf("producer %d: action %d ran at position %d", p, v, k)
			}
		}
	}
	if total != producers*perProducer {
		t.Errorf("%d actions ran, want %d", total, producers*perProducer)
	}
	if n := wrongGoroutine.Load(); n > 0 {
		t.Errorf("%d actions ran outside run", n)
	}
	m.run()
	if total2 := func() (n int) {
		for _, r := range runs {
			n += len(r)
		}
		return n
	}(); total2 != total {
		t.Errorf("a second run re-ran %d actions", total2-total)
	}
}

// TestMailboxPutFromAction: an action may put another; it runs on the next
// turn, not in the current batch, and nothing is lost or repeated when the
// queue's buffers are reused.
func TestMailboxPutFromAction(t *testing.T) {
	m := NewMailbox()
	var got []int
	var put func(i int)
	put = func(i int) {
		m.Put(func() {
			got = append(got, i)
			if i < 100 && i%3 == 0 {
				put(i + 1000)
			}
		})
	}
	for i := range 10 {
		put(i)
	}
	m.run()
	if len(got) != 10 {
		t.Fatalf("first turn ran %v", got)
	}
	m.run()
	if want := []int{1000, 1003, 1006, 1009}; !slices.Equal(got[10:], want) {
		t.Fatalf("second turn ran %v, want %v", got[10:], want)
	}
	for turn := range 50 { // reuse of the double buffer
		for i := range turn {
			put(10000 + i)
		}
		before := len(got)
		m.run()
		if len(got)-before != turn {
			t.Fatalf("turn %d ran %d actions", turn, len(got)-before)
		}
		for i := range turn {
			if got[before+i] != 10000+i {
				t.Fatalf("turn %d: %v", turn, got[before:])
			}
		}
	}
	m.run()
	if n := len(m.actions); n != 0 {
		t.Errorf("%d actions left", n)
	}
}
