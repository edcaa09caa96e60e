package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// nodeSpec describes a node; spec.build makes a fresh StreamGraph each time,
// since Compile resolves default edges in place.
type nodeSpec struct {
	name, uid, typ            string
	p, maxp                   int
	source, nochain, newchain bool
	ins                       []Edge
}

type spec []nodeSpec

func (s spec) build() *StreamGraph {
	sg := &StreamGraph{JobName: "prop", DefaultParallelism: 1}
	for _, ns := range s {
		sg.Add(&Node{Name: ns.name, UID: ns.uid, TypeName: ns.typ, Parallelism: ns.p, MaxParallelism: ns.maxp,
			IsSource: ns.source, ChainingDisabled: ns.nochain, StartNewChain: ns.newchain,
			Inputs: append([]Edge(nil), ns.ins...)})
	}
	return sg
}

func (s spec) clone() spec {
	c := append(spec(nil), s...)
	for i := range c {
		c[i].ins = append([]Edge(nil), c[i].ins...)
	}
	return c
}

// randomSpec makes a valid random graph: explicit forward edges only between
// nodes of equal parallelism.
func randomSpec(r *rand.Rand) spec {
	n := 1 + r.IntN(12)
	s := make(spec, n)
	for i := range s {
		ns := nodeSpec{name: fmt.Sprintf("op%d", r.IntN(4)), typ: "int64", p: 1 + r.IntN(4),
			nochain: r.IntN(8) == 0, newchain: r.IntN(8) == 0}
		if r.IntN(5) == 0 {
			ns.uid = fmt.Sprintf("uid%d", i)
		}
		if i == 0 || r.IntN(6) == 0 {
			ns.source = true
		} else {
			two := r.IntN(4) == 0
			for k := range 1 + r.IntN(2) {
				from := r.IntN(i)
				e := Edge{From: from, Default: true}
				if two {
					e.Input = k
				}
				if r.IntN(2) == 0 {
					e.Default, e.Partition = false, PartitionKind(r.IntN(int(Custom)+1))
					if e.Partition == Forward {
						ns.p = s[from].p
					}
				}
				ns.ins = append(ns.ins, e)
			}
		}
		s[i] = ns
	}
	// A node's parallelism may have been set by its second forward input.
	for i, ns := range s {
		for k, e := range ns.ins {
			if !e.Default && e.Partition == Forward && s[e.From].p != ns.p {
				s[i].ins[k].Partition = Rebalance
			}
		}
	}
	return s
}

func mustCompile(t *testing.T, s spec) *JobGraph {
	t.Helper()
	jg, err := Compile(s.build())
	if err != nil {
		t.Fatalf("%v\n%+v", err, s)
	}
	checkJobGraph(t, jg)
	return jg
}

func TestOperatorIDProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.New(t), 0))
	rescaledWithFlips := 0
	for iter := range 300 {
		s := randomSpec(r)
		a := mustCompile(t, s)

		// Determinism: a second build of the same program agrees.
		b := mustCompile(t, s)
		if a.Fingerprint != b.Fingerprint || a.Describe() != b.Describe() || fmt.Sprint(a.OperatorIDs) != fmt.Sprint(b.OperatorIDs) {
			t.Fatalf("iteration %d: two builds differ", iter)
		}

		// Parallelism: random new parallelisms (skipping those an explicit
		// forward edge forbids) keep every ID.
		for range 5 {
			c := s.clone()
			for i := range c {
				c[i].p = 1 + r.IntN(6)
			}
			jc, err := Compile(c.build())
			if err != nil {
				continue
			}
			rescaledWithFlips++
			if fmt.Sprint(a.OperatorIDs) != fmt.Sprint(jc.OperatorIDs) {
				t.Fatalf("iteration %d: a change of parallelism changed operator IDs\n%v\n%v", iter, a.OperatorIDs, jc.OperatorIDs)
			}
			if same := a.Fingerprint == jc.Fingerprint; same != (a.Describe() == jc.Describe()) {
				t.Fatalf("iteration %d: fingerprint same=%t but plan same=%t\n%s---\n%s", iter, same, !same, a.Describe(), jc.Describe())
			}
		}

		// Renaming node k changes its ID (unless it has a UID) and the IDs of
		// the nodes reading from it, transitively up to nodes with a UID;
		// nothing else. (Names are made unique first: a node's ID also
		// counts earlier nodes of the same name and inputs.)
		k := r.IntN(len(s))
		u := s.clone()
		for i := range u {
			u[i].name = fmt.Sprintf("%s-%d", u[i].name, i)
		}
		s = u
		a = mustCompile(t, s)
		c := s.clone()
		c[k].name += "-renamed"
		jc := mustCompile(t, c)
		affected := make([]bool, len(s))
		affected[k] = s[k].uid == ""
		for i := k + 1; i < len(s); i++ {
			for _, e := range s[i].ins {
				affected[i] = affected[i] || (affected[e.From] && s[i].uid == "")
			}
		}
		for i := range s {
			if changed := a.OperatorIDs[i] != jc.OperatorIDs[i]; changed != affected[i] {
				t.Fatalf("iteration %d: renaming node %d: node %d changed=%t, want %t\n%+v", iter, k, i, changed, affected[i], s)
			}
		}
		if a.Fingerprint == jc.Fingerprint {
			t.Fatalf("iteration %d: renaming node %d kept the fingerprint", iter, k)
		}

		// Other structural changes change the fingerprint.
		for _, m := range []func(ns *nodeSpec){
			func(ns *nodeSpec) { ns.typ = "string" },
			func(ns *nodeSpec) { ns.uid = "changed-uid" },
		} {
			c := s.clone()
			m(&c[k])
			if mustCompile(t, c).Fingerprint == a.Fingerprint {
				t.Fatalf("iteration %d: a change of node %d kept the fingerprint\n%+v", iter, k, c[k])
			}
		}
		c = append(s.clone(), nodeSpec{name: "extra", p: 1, ins: []Edge{{From: k, Partition: Rebalance}}})
		if mustCompile(t, c).Fingerprint == a.Fingerprint {
			t.Fatalf("iteration %d: adding an operator kept the fingerprint", iter)
		}
		if len(s[k].ins) > 0 {
			c := s.clone()
			e := &c[k].ins[0]
			e.Default, e.Partition = false, Broadcast
			if s[k].ins[0].Partition == Broadcast && !s[k].ins[0].Default {
				e.Partition = Shuffle
			}
			if mustCompile(t, c).Fingerprint == a.Fingerprint {
				t.Fatalf("iteration %d: changing a partitioning kept the fingerprint", iter)
			}
		}
	}
	if rescaledWithFlips < 150 {
		t.Errorf("only %d rescaled graphs compiled", rescaledWithFlips)
	}
}
