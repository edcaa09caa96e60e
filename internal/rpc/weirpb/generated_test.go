package weirpb

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

const protoPath = "../../../proto/weir/cluster/v1/cluster.proto"

// TestGeneratedFromThisProto: the generated code was made from the .proto
// as it is (scripts/gen-proto records its digest), so a .proto changed
// without regenerating fails here, with no tool needed.
func TestGeneratedFromThisProto(t *testing.T) {
	src, err := os.ReadFile(protoPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("cluster.proto.sha256")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != strings.TrimSpace(string(want)) {
		t.Fatalf("%s changed since internal/rpc/weirpb was generated (digest %s, generated from %s): run scripts/gen-proto",
			protoPath, got, strings.TrimSpace(string(want)))
	}
}

// TestDescriptorMatchesProtoc: with protoc on PATH, the descriptor compiled
// into the generated code equals protoc's of the .proto (messages, fields,
// services), comments aside. Without protoc it skips, except under CI,
// where scripts/test installs it (a skip there would hide a stale file).
func TestDescriptorMatchesProtoc(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
			t.Fatal("CI: protoc is not on PATH; scripts/test installs Debian's protobuf-compiler under CI")
		}
		t.Skip("protoc is not on PATH (Debian: apt-get install protobuf-compiler); TestGeneratedFromThisProto checks the digest instead")
	}
	out := filepath.Join(t.TempDir(), "set.pb")
	cmd := exec.Command(protoc, "-I", "../../../proto", "--descriptor_set_out="+out, "weir/cluster/v1/cluster.proto")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.File) != 1 {
		t.Fatalf("protoc described %d files, want 1", len(set.File))
	}
	want := set.File[0]
	got := protodesc.ToFileDescriptorProto(File_weir_cluster_v1_cluster_proto)
	want.SourceCodeInfo, got.SourceCodeInfo = nil, nil
	if !proto.Equal(got, want) {
		t.Fatalf("the generated code's descriptor differs from protoc's of %s: run scripts/gen-proto\ngenerated: %v\nprotoc:    %v", protoPath, got, want)
	}
}
