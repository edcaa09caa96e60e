package protocol

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/weirhq/weir/internal/testseed"
)

// messages lists one value of every message type. A message type missing
// here fails TestEveryTypeEncodes (it parses the package's source).
var messages = []Message{
	Deployment{}, CancelTask{}, TriggerCheckpoint{}, NotifyCheckpoint{}, OperatorEvent{},
	ReleaseJob{}, TaskStatsReport{}, TaskManagerRegistration{}, TaskStateUpdate{}, AcknowledgeCheckpoint{}, DeclineCheckpoint{}, SourceEnded{},
	RegisterJob{}, Heartbeat{}, HeartbeatReply{}, Deregister{}, DeployAttempt{},
}

// nonMessages are the exported struct types that never cross the boundary
// themselves, with the reason.
var nonMessages = map[string]string{
	"LoopbackTaskManager": "a transport: it carries messages",
	"LoopbackJobManager":  "a transport: it carries messages",
}

func randomMessage(r *rand.Rand, m Message) Message {
	v := reflect.New(reflect.TypeOf(m)).Elem()
	testseed.Fill(r, v)
	return v.Interface().(Message)
}

// TestRoundTrip encodes random values of every message kind: each decodes
// to a deeply equal message, and encodes again to the same frame.
func TestRoundTrip(t *testing.T) {
	r := testseed.Rand(t, 1)
	for _, m := range messages {
		name := reflect.TypeOf(m).Name()
		if got := m.Kind().String(); got != name {
			t.Errorf("%s.Kind() is %s", name, got)
		}
		for range 300 {
			m := randomMessage(r, m)
			b, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode(%#v): %v", m, err)
			}
			if b[0] != Version || Kind(b[1]) != m.Kind() {
				t.Fatalf("%s frame starts % x", name, b[:2])
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(%#v)): %v", m, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("%s did not round-trip:\n sent %#v\n  got %#v", name, m, got)
			}
			if b2, _ := Encode(got); !bytes.Equal(b2, b) {
				t.Fatalf("%s encodes differently after a round trip:\n % x\n % x", name, b, b2)
			}
		}
	}
}

// TestEveryTypeEncodes lists the package's exported struct types from its
// source: each must be a message in the messages table (which
// TestRoundTrip round-trips), a part of one (reached through its fields),
// or listed in nonMessages with a reason. So a new message type that nobody
// encodes fails here.
func TestEveryTypeEncodes(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var structs []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.IsExported() && ts.Assign == 0 {
				if _, ok := ts.Type.(*ast.StructType); ok {
					structs = append(structs, ts.Name.Name)
				}
			}
			return true
		})
	}
	if len(structs) < len(messages) {
		t.Fatalf("found %d exported struct types in the source, fewer than the %d messages", len(structs), len(messages))
	}
	isMessage, parts := map[string]bool{}, map[string]bool{}
	pkg := reflect.TypeOf(Deployment{}).PkgPath()
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(ty.Elem())
		case reflect.Struct:
			if ty.PkgPath() == pkg && !parts[ty.Name()] {
				parts[ty.Name()] = true
				for i := range ty.NumField() {
					walk(ty.Field(i).Type)
				}
			}
		}
	}
	for _, m := range messages {
		isMessage[reflect.TypeOf(m).Name()] = true
		walk(reflect.TypeOf(m))
	}
	sort.Strings(structs)
	for _, s := range structs {
		switch {
		case isMessage[s]:
		case parts[s]:
			t.Logf("%s: a part of a message", s)
		case nonMessages[s] != "":
			t.Logf("%s: not a message: %s", s, nonMessages[s])
		default:
			t.Errorf("type %s is not in the messages table of encoding_test.go, nor a field of a message there: "+
				"give it a Kind and an encoding (encoding.go) and add it to the table, or list it in nonMessages with the reason", s)
		}
	}
}

// TestDecodeTruncated: every proper prefix of a frame fails to decode,
// with an error that names the message kind.
func TestDecodeTruncated(t *testing.T) {
	r := testseed.Rand(t, 2)
	for _, m := range messages {
		for range 20 {
			m := randomMessage(r, m)
			b, _ := Encode(m)
			for n := range len(b) {
				_, err := Decode(b[:n])
				if err == nil {
					t.Fatalf("%d of %d bytes of a %s frame decoded", n, len(b), m.Kind())
				}
				if n >= 2 && !strings.Contains(err.Error(), m.Kind().String()) {
					t.Fatalf("the error %q does not name %s", err, m.Kind())
				}
			}
			if _, err := Decode(append(b, 0)); err == nil || !strings.Contains(err.Error(), "1 bytes follow") {
				t.Fatalf("a %s frame with a byte after it: %v", m.Kind(), err)
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	frame := func(m Message) []byte {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	d := frame(Deployment{Exec: ExecutionID{Job: "j"}, Restore: &TaskRestore{Operators: []OperatorRestore{{OperatorID: "op", Operator: []byte("state")}}}})
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "a frame of 0 bytes"},
		{"version", []byte{Version + 1, byte(KindSourceEnded)}, fmt.Sprintf("decoding SourceEnded: the frame is of version %d", Version+1)},
		{"kind", []byte{Version, 200}, "unknown kind 200"},
		{"truncated field", d[:len(d)-4], "decoding Deployment: field Restore.Operators.Operator: a length of 5 with 3 bytes left"},
		{"count", []byte{Version, byte(KindAcknowledgeCheckpoint), 0, 0, 0, 0, 0, 100}, "field Operators: 99 elements of at least 8 bytes each with 0 bytes left"},
		{"bool", []byte{Version, byte(KindTaskStatsReport), 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0}, "field Tasks.Stats.OutputIdle: bool byte 2"},
		{"crc", frame(OperatorEvent{})[:2], "field Exec.Job: a truncated"},
		{"heartbeat executions", []byte{Version, byte(KindHeartbeat), 0, 0, 0, 3}, "decoding Heartbeat: field Executions: 2 elements of at least 9 bytes each with 0 bytes left"},
		{"heartbeat state", frame(Heartbeat{Executions: []ExecutionReport{{State: TaskRunning}}})[:16], "decoding Heartbeat: field Executions.State: a length of 7 with 1 bytes left"},
		{"reply held", []byte{Version, byte(KindHeartbeatReply), 1, 2, 0, 5, 0, 0}, "decoding HeartbeatReply: field Held.Job: a length of 5 with 2 bytes left"},
	} {
		_, err := Decode(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode(% x) = %v, want an error with %q", c.name, c.b, err, c.want)
		}
	}
	defer func(n int) { maxFrameSize = n }(maxFrameSize)
	maxFrameSize = 100
	b, err := Encode(OperatorEvent{Payload: make([]byte, 100)})
	if err == nil || !strings.Contains(err.Error(), "encoding OperatorEvent: 108 bytes, more than the 100") {
		t.Errorf("encoding a frame over MaxFrameSize: %v", err)
	}
	maxFrameSize = 200
	b, _ = Encode(OperatorEvent{Payload: make([]byte, 150)})
	maxFrameSize = 100
	if _, err := Decode(b); err == nil || !strings.Contains(err.Error(), "decoding OperatorEvent: a frame of 159 bytes, more than the 100") {
		t.Errorf("decoding a frame over MaxFrameSize: %v", err)
	}
}

// TestMinSizes: the fewest bytes the decoder assumes per slice element are
// what a zero element encodes to (more would refuse valid frames): the
// frame with one zero element less the frame with none.
func TestMinSizes(t *testing.T) {
	size := func(one, none Message) int {
		a, err := Encode(one)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Encode(none)
		if err != nil {
			t.Fatal(err)
		}
		return len(a) - len(b)
	}
	restore := func(op OperatorRestore) Deployment {
		return Deployment{Restore: &TaskRestore{Operators: []OperatorRestore{op}}}
	}
	ack := func(st SubtaskState) AcknowledgeCheckpoint {
		return AcknowledgeCheckpoint{Operators: []OperatorSnapshot{{State: st}}}
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"object", size(restore(OperatorRestore{InputChannels: make([]ObjectHandle, 1)}), restore(OperatorRestore{InputChannels: []ObjectHandle{}})), minObject},
		{"keyed", size(ack(SubtaskState{Keyed: make([]KeyedHandle, 1)}), ack(SubtaskState{Keyed: []KeyedHandle{}})), minKeyed},
		{"native file", size(ack(SubtaskState{Keyed: []KeyedHandle{{Files: make([]NativeFile, 1)}}}),
			ack(SubtaskState{Keyed: []KeyedHandle{{Files: []NativeFile{}}}})), minNativeFile},
		{"operator restore", size(Deployment{Restore: &TaskRestore{Operators: make([]OperatorRestore, 1)}},
			Deployment{Restore: &TaskRestore{Operators: []OperatorRestore{}}}), minOperatorRestore},
		{"operator snapshot", size(AcknowledgeCheckpoint{Operators: make([]OperatorSnapshot, 1)},
			AcknowledgeCheckpoint{Operators: []OperatorSnapshot{}}), minOperatorSnapshot},
		{"operator metric", size(TaskStatsReport{Tasks: []ExecutionStats{{Stats: TaskStats{Operators: make([]OperatorMetric, 1)}}}},
			TaskStatsReport{Tasks: []ExecutionStats{{Stats: TaskStats{Operators: []OperatorMetric{}}}}}), minOperatorMetric},
		{"execution stats", size(TaskStatsReport{Tasks: make([]ExecutionStats, 1)}, TaskStatsReport{Tasks: []ExecutionStats{}}), minExecutionStats},
		{"heartbeat stats", size(Heartbeat{Stats: make([]ExecutionStats, 1)}, Heartbeat{Stats: []ExecutionStats{}}), minExecutionStats},
		{"execution report", size(Heartbeat{Executions: make([]ExecutionReport, 1)}, Heartbeat{Executions: []ExecutionReport{}}), minExecutionReport},
		{"allocation", size(HeartbeatReply{Held: make([]AllocationID, 1)}, HeartbeatReply{Held: []AllocationID{}}), minAllocation},
		{"slot placement", size(DeployAttempt{Slots: make([]SlotPlacement, 1)}, DeployAttempt{Slots: []SlotPlacement{}}), minSlotPlacement},
	} {
		if c.got != c.want {
			t.Errorf("a zero %s encodes to %d bytes, the decoder assumes %d at least", c.name, c.got, c.want)
		}
	}
}

// FuzzDecode: Decode never panics, and a message it decodes encodes to a
// frame that decodes to the same message and encodes the same again.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(35, 1)) // a fixed seed corpus
	for _, m := range messages {
		for range 3 {
			b, err := Encode(randomMessage(r, m))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		b2, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(Decode(% x)): %v", b, err)
		}
		m2, err := Decode(b2)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(% x))): %v", b, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("decoded %#v, then %#v", m, m2)
		}
		if b3, _ := Encode(m2); !bytes.Equal(b2, b3) {
			t.Fatalf("encoded % x, then % x", b2, b3)
		}
	})
}
