package heartbeat

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

type dep = Deployed[string, int]
type rep = Reported[string, int]

func TestReconcileTable(t *testing.T) {
	cases := []struct {
		name      string
		deployed  []dep
		reported  []rep
		processed uint64
		cancel    []string
		missing   []string
	}{
		{name: "nothing", processed: 5},
		{name: "all reported",
			deployed:  []dep{{"a", 1, 3, false}, {"b", 1, 4, false}},
			reported:  []rep{{"a", 1, false}, {"b", 1, false}},
			processed: 4},
		{name: "deployment in flight is not missing",
			deployed:  []dep{{"a", 1, 3, false}, {"b", 1, 9, false}},
			reported:  []rep{{"a", 1, false}},
			processed: 8},
		{name: "processed deployment not reported is missing",
			deployed:  []dep{{"a", 1, 3, false}, {"b", 1, 8, false}},
			reported:  []rep{{"a", 1, false}},
			processed: 8, missing: []string{"b"}},
		{name: "ended on the JobManager: not missing (cancel or end in flight)",
			deployed:  []dep{{"a", 1, 3, true}},
			processed: 8},
		{name: "unknown allocation is cancelled",
			deployed:  []dep{{"a", 2, 3, false}},
			reported:  []rep{{"a", 2, false}, {"old", 1, false}},
			processed: 3, cancel: []string{"old"}},
		{name: "unknown execution under a held allocation is cancelled",
			deployed:  []dep{{"a", 2, 3, false}},
			reported:  []rep{{"a", 2, false}, {"x", 2, false}},
			processed: 3, cancel: []string{"x"}},
		{name: "unknown but ended on the TaskManager: nothing to cancel",
			reported:  []rep{{"old", 1, true}},
			processed: 3},
		{name: "cancel in flight: the JobManager still lists it, not sent again",
			deployed:  []dep{{"a", 1, 3, true}},
			reported:  []rep{{"a", 1, false}},
			processed: 2},
		{name: "same execution under another allocation: cancel it, and missing",
			deployed:  []dep{{"a", 2, 3, false}},
			reported:  []rep{{"a", 1, false}},
			processed: 3, cancel: []string{"a"}, missing: []string{"a"}},
		{name: "duplicates reported once, in input order",
			deployed:  []dep{{"c", 1, 1, false}, {"d", 1, 1, false}, {"c", 1, 1, false}},
			reported:  []rep{{"y", 9, false}, {"x", 9, false}, {"y", 9, false}},
			processed: 1, cancel: []string{"y", "x"}, missing: []string{"c", "d"}},
		{name: "reported ended is still reported: not missing",
			deployed:  []dep{{"a", 1, 3, false}},
			reported:  []rep{{"a", 1, true}},
			processed: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Reconcile(c.deployed, c.reported, c.processed)
			if !slices.Equal(r.Cancel, c.cancel) || !slices.Equal(r.Missing, c.missing) {
				t.Fatalf("cancel %q missing %q, want cancel %q missing %q", r.Cancel, r.Missing, c.cancel, c.missing)
			}
		})
	}
}

func TestUnheld(t *testing.T) {
	cases := []struct {
		name    string
		running []rep
		held    []int
		want    []string
	}{
		{"nothing", nil, []int{1}, nil},
		{"all held", []rep{{"a", 1, false}, {"b", 2, false}}, []int{2, 1}, nil},
		{"released allocation", []rep{{"a", 1, false}, {"b", 2, false}, {"c", 2, false}}, []int{1}, []string{"b", "c"}},
		{"ended ones are left alone", []rep{{"a", 3, true}}, nil, nil},
		{"once each", []rep{{"a", 3, false}, {"a", 3, false}}, nil, []string{"a"}},
	}
	for _, c := range cases {
		if got := Unheld(c.running, c.held); !slices.Equal(got, c.want) {
			t.Errorf("%s: Unheld = %q, want %q", c.name, got, c.want)
		}
	}
}

// reconcileModel is Reconcile's rule by brute force: nested scans, no maps.
func reconcileModel(deployed []dep, reported []rep, processed uint64) (cancel, missing []string) {
	for _, r := range reported {
		if r.Terminal || slices.Contains(cancel, r.Exec) {
			continue
		}
		known := false
		for _, d := range deployed {
			known = known || (d.Exec == r.Exec && d.Alloc == r.Alloc)
		}
		if !known {
			cancel = append(cancel, r.Exec)
		}
	}
	for _, d := range deployed {
		if d.Terminal || d.Seq > processed || slices.Contains(missing, d.Exec) {
			continue
		}
		seen := false
		for _, r := range reported {
			seen = seen || (d.Exec == r.Exec && d.Alloc == r.Alloc)
		}
		if !seen {
			missing = append(missing, d.Exec)
		}
	}
	return cancel, missing
}

func TestReconcileAgainstModel(t *testing.T) {
	rng := testseed.Rand(t, 2)
	for i := range 20000 {
		var deployed []dep
		var reported []rep
		for range rng.IntN(6) {
			deployed = append(deployed, dep{fmt.Sprint("e", rng.IntN(5)), rng.IntN(3), uint64(rng.IntN(10)), rng.IntN(4) == 0})
		}
		for range rng.IntN(6) {
			reported = append(reported, rep{fmt.Sprint("e", rng.IntN(5)), rng.IntN(3), rng.IntN(4) == 0})
		}
		processed := uint64(rng.IntN(10))
		r := Reconcile(deployed, reported, processed)
		c, m := reconcileModel(deployed, reported, processed)
		if !slices.Equal(r.Cancel, c) || !slices.Equal(r.Missing, m) {
			t.Fatalf("case %d: Reconcile(%v, %v, %d) = cancel %q missing %q, model cancel %q missing %q",
				i, deployed, reported, processed, r.Cancel, r.Missing, c, m)
		}
	}
}

// TestReconcileSimulated runs a JobManager and a TaskManager exchanging
// deployments, cancels and terminal states over an ordered session with
// random delays, and reconciles at random heartbeats: with both sides
// honest nothing is ever flagged, however much is in flight; an execution
// the TaskManager silently dropped is reported missing, and a stale one it
// runs is cancelled.
func TestReconcileSimulated(t *testing.T) {
	rng := testseed.Rand(t, 3)
	for i := range 2000 {
		simulateReconcile(t, rng, i)
	}
}

type jmMsg struct {
	cancel bool
	exec   string
	alloc  int
}

func simulateReconcile(t *testing.T, rng *rand.Rand, round int) {
	t.Helper()
	var (
		jmSent    []jmMsg            // JobManager -> TaskManager, seq = index + 1
		processed int                // how many of them the TaskManager processed
		jm        = map[string]dep{} // the JobManager's entries
		tmRun     = map[string]int{} // the TaskManager's live executions
		tmEnded   = map[string]int{} // ended, still reported (terminal) until it forgets them
		tmUpdates []string           // TaskManager -> JobManager: terminal states in flight
		next      int
	)
	end := func(e string) { // the TaskManager ends e and tells the JobManager
		tmEnded[e] = tmRun[e]
		delete(tmRun, e)
		tmUpdates = append(tmUpdates, e)
	}
	for step := range 60 {
		switch rng.IntN(6) {
		case 0: // deploy
			e := fmt.Sprint("x", next)
			next++
			a := rng.IntN(3)
			jmSent = append(jmSent, jmMsg{exec: e, alloc: a})
			jm[e] = dep{e, a, uint64(len(jmSent)), false}
		case 1: // the JobManager cancels a live one
			var live []string
			for _, e := range sortedKeys(jm) {
				if !jm[e].Terminal {
					live = append(live, e)
				}
			}
			if len(live) > 0 {
				e := live[rng.IntN(len(live))]
				d := jm[e]
				d.Terminal = true
				jm[e] = d
				jmSent = append(jmSent, jmMsg{cancel: true, exec: e})
			}
		case 2: // the TaskManager processes the next message
			if processed < len(jmSent) {
				m := jmSent[processed]
				processed++
				if !m.cancel {
					tmRun[m.exec] = m.alloc
				} else if _, ok := tmRun[m.exec]; ok {
					end(m.exec)
				}
			}
		case 3: // an execution ends on its own
			if run := sortedKeys(tmRun); len(run) > 0 {
				end(run[rng.IntN(len(run))])
			}
		case 4: // the JobManager processes the next terminal state
			if len(tmUpdates) > 0 {
				delete(jm, tmUpdates[0])
				tmUpdates = tmUpdates[1:]
			}
		case 5: // a heartbeat: the TaskManager's earlier messages come first
			for _, e := range tmUpdates {
				delete(jm, e)
			}
			tmUpdates = nil
			var deployed []dep
			for _, e := range sortedKeys(jm) {
				deployed = append(deployed, jm[e])
			}
			var reported []rep
			for _, e := range sortedKeys(tmRun) {
				reported = append(reported, rep{e, tmRun[e], false})
			}
			for _, e := range sortedKeys(tmEnded) {
				reported = append(reported, rep{e, tmEnded[e], true})
			}
			rng.Shuffle(len(reported), func(i, j int) { reported[i], reported[j] = reported[j], reported[i] })
			r := Reconcile(deployed, reported, uint64(processed))
			where := fmt.Sprintf("round %d step %d: deployed %v reported %v processed %d", round, step, deployed, reported, processed)
			if len(r.Cancel)+len(r.Missing) > 0 {
				t.Fatalf("%s: honest sides flagged cancel %q missing %q", where, r.Cancel, r.Missing)
			}
			// A stale execution under an allocation never held is cancelled.
			stale := append(slices.Clone(reported), rep{"stale", 99, false})
			if r := Reconcile(deployed, stale, uint64(processed)); !slices.Equal(r.Cancel, []string{"stale"}) || len(r.Missing) > 0 {
				t.Fatalf("%s: with a stale execution: cancel %q missing %q", where, r.Cancel, r.Missing)
			}
			// A live execution the TaskManager dropped without a word is
			// missing, unless the JobManager already ended it.
			for _, k := range rng.Perm(len(reported)) {
				x := reported[k]
				if x.Terminal {
					continue
				}
				dropped := slices.Delete(slices.Clone(reported), k, k+1)
				r := Reconcile(deployed, dropped, uint64(processed))
				var want []string
				if !jm[x.Exec].Terminal {
					want = []string{x.Exec}
				}
				if len(r.Cancel) > 0 || !slices.Equal(r.Missing, want) {
					t.Fatalf("%s: dropped %s: cancel %q missing %q, want missing %q", where, x.Exec, r.Cancel, r.Missing, want)
				}
				break
			}
			tmEnded = map[string]int{} // reported once, then forgotten
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
