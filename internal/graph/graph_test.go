package graph

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var partitionNames = map[string]PartitionKind{
	"forward": Forward, "rebalance": Rebalance, "rescale": Rescale, "broadcast": Broadcast,
	"shuffle": Shuffle, "hash": Hash, "custom": Custom,
}

// parseGraph reads a stream graph, one node a line:
//
//	NAME [p=N] [maxp=N] [uid=U] [type=T] [source] [sink] [nochain] [newchain] [in=FROM[:KIND][:INPUT]]... [was=OLD]
//
// FROM is the name of an earlier node (the latest one of that name) or #ID;
// KIND is default (the user chose none) or a partition kind in lower case;
// INPUT is the consumer's logical input (0 unless given). was=OLD is read
// only by the compare command: the node's name in the graph before the change.
func parseGraph(lines []string) (*StreamGraph, error) {
	sg := &StreamGraph{JobName: "test"}
	byName := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		n := &Node{Name: f[0], TypeName: "int64"}
		for _, a := range f[1:] {
			k, v, _ := strings.Cut(a, "=")
			var err error
			switch k {
			case "p":
				n.Parallelism, err = strconv.Atoi(v)
			case "maxp":
				n.MaxParallelism, err = strconv.Atoi(v)
			case "uid":
				n.UID = v
			case "was":
			case "type":
				n.TypeName = v
			case "source":
				n.IsSource = true
			case "sink":
				n.IsSink, n.TypeName = true, ""
			case "nochain":
				n.ChainingDisabled = true
			case "newchain":
				n.StartNewChain = true
			case "in":
				var e Edge
				e, err = parseEdge(v, byName)
				n.Inputs = append(n.Inputs, e)
			default:
				err = fmt.Errorf("unknown attribute %q", a)
			}
			if err != nil {
				return nil, fmt.Errorf("%q: %v", l, err)
			}
		}
		sg.Add(n)
		byName[n.Name] = n.ID
	}
	return sg, nil
}

func parseEdge(s string, byName map[string]int) (Edge, error) {
	parts := strings.Split(s, ":")
	e := Edge{Default: true}
	if id, ok := strings.CutPrefix(parts[0], "#"); ok {
		n, err := strconv.Atoi(id)
		if err != nil {
			return e, err
		}
		e.From = n
	} else if n, ok := byName[parts[0]]; ok {
		e.From = n
	} else {
		return e, fmt.Errorf("no node %q", parts[0])
	}
	if len(parts) > 1 && parts[1] != "default" {
		k, ok := partitionNames[parts[1]]
		if !ok {
			return e, fmt.Errorf("unknown partitioning %q", parts[1])
		}
		e.Default, e.Partition = false, k
	}
	if len(parts) > 2 {
		n, err := strconv.Atoi(parts[2])
		if err != nil {
			return e, err
		}
		e.Input = n
	}
	return e, nil
}

func compileText(t *testing.T, tc *testCase, lines []string) (*JobGraph, error) {
	sg, err := parseGraph(lines)
	if err != nil {
		t.Fatalf("%s: %v", tc.pos, err)
	}
	sg.DefaultParallelism = tc.intArg(t, "default-p", 1)
	sg.MaxParallelism = tc.intArg(t, "max-p", 0)
	return Compile(sg)
}

// TestCompile runs testdata/compile.txt: `compile` prints JobGraph.Describe()
// (or the error); `ids` prints each operator's ID and the fingerprint;
// `compare` compiles the graphs before and after a `vs` line and says, for
// each node after, whether its operator ID is the same as that of the node of
// its name (or was= name) before ("new" if there was none), and whether the
// fingerprint stayed the same.
func TestCompile(t *testing.T) {
	for _, file := range []string{"compile.txt", "stability.txt"} {
		runDataDriven(t, filepath.Join("testdata", file), func(t *testing.T, tc *testCase) string {
			switch tc.cmd {
			case "compile":
				jg, err := compileText(t, tc, tc.input)
				if err != nil {
					return "error: " + err.Error()
				}
				checkJobGraph(t, jg)
				return fmt.Sprintf("max-parallelism=%d\n%s", jg.MaxParallelism, jg.Describe())
			case "ids":
				jg, err := compileText(t, tc, tc.input)
				if err != nil {
					return "error: " + err.Error()
				}
				var b strings.Builder
				for i, id := range jg.OperatorIDs {
					fmt.Fprintf(&b, "%s %s\n", strings.Fields(tc.input[i])[0], id)
				}
				fmt.Fprintf(&b, "fingerprint %s\n", jg.Fingerprint)
				return b.String()
			case "compare":
				i := 0
				for i < len(tc.input) && tc.input[i] != "vs" {
					i++
				}
				if i == len(tc.input) {
					t.Fatalf("%s: compare needs a vs line", tc.pos)
				}
				a, errA := compileText(t, tc, tc.input[:i])
				b, errB := compileText(t, tc, tc.input[i+1:])
				if errA != nil || errB != nil {
					return fmt.Sprintf("error: %v / %v", errA, errB)
				}
				// Match each node after the change to the node of the same
				// name (or its was= name) before it.
				before := map[string]string{}
				for k, l := range tc.input[:i] {
					before[strings.Fields(l)[0]] = a.OperatorIDs[k]
				}
				var out strings.Builder
				for k, l := range tc.input[i+1:] {
					f := strings.Fields(l)
					name := f[0]
					for _, attr := range f[1:] {
						if old, ok := strings.CutPrefix(attr, "was="); ok {
							name = old
						}
					}
					verdict := "new"
					if old, ok := before[name]; ok {
						verdict = "changed"
						if old == b.OperatorIDs[k] {
							verdict = "same"
						}
					}
					fmt.Fprintf(&out, "%s: %s\n", f[0], verdict)
				}
				fp := "differs"
				if a.Fingerprint == b.Fingerprint {
					fp = "same"
				}
				fmt.Fprintf(&out, "fingerprint: %s\n", fp)
				return out.String()
			}
			t.Fatalf("%s: unknown command %q", tc.pos, tc.cmd)
			return ""
		})
	}
}

// checkJobGraph checks the invariants every compiled graph keeps.
func checkJobGraph(t *testing.T, jg *JobGraph) {
	t.Helper()
	seen := map[*Node]*Vertex{}
	for i, v := range jg.Vertices {
		if v.Index != i || v.ID != jg.OperatorIDs[v.Nodes[0].ID] {
			t.Errorf("vertex %d: index %d, id %s", i, v.Index, v.ID)
		}
		for k, n := range v.Nodes {
			if seen[n] != nil {
				t.Errorf("node %q is in two vertices", n.Name)
			}
			seen[n] = v
			if k > 0 && n.ID <= v.Nodes[k-1].ID {
				t.Errorf("vertex %q: nodes not in ID order", v.Name)
			}
		}
		for _, e := range v.Inputs {
			if e.Target != v || e.ToNode != v.Nodes[0] || e.Input >= v.NumInputs {
				t.Errorf("vertex %q: bad input edge %d", v.Name, e.Index)
			}
		}
	}
	for i, e := range jg.Edges {
		if e.Index != i || seen[e.FromNode] != e.Source || e.Pattern != e.Partition.Pattern() {
			t.Errorf("edge %d is inconsistent", i)
		}
		if e.Partition == Forward && e.Source.Parallelism != e.Target.Parallelism {
			t.Errorf("edge %d: forward between parallelism %d and %d", i, e.Source.Parallelism, e.Target.Parallelism)
		}
	}
	seenID := map[string]bool{}
	for _, id := range jg.OperatorIDs {
		if len(id) != 32 || seenID[id] {
			t.Errorf("operator ID %q is malformed or repeated", id)
		}
		seenID[id] = true
	}
}
