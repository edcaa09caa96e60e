package wire

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.hex from goldenFrames")

// TestGolden pins the encoding of each frame type: testdata/<name>.hex
// holds the hex of goldenFrames' frames (a comment line, then 16 bytes a
// line). The encoder must produce those bytes, and the decoder must read
// them back to the frame, so a change to the layout shows as a diff and
// frames written by an older build of this version stay readable. After
// a deliberate change (and a Version bump), regenerate with
// go test ./internal/network/wire -run TestGolden -update.
func TestGolden(t *testing.T) {
	for _, g := range goldenFrames {
		t.Run(g.name, func(t *testing.T) {
			path := filepath.Join("testdata", g.name+".hex")
			b := enc(t, g.f)
			if *update {
				if err := os.WriteFile(path, formatHex(g.f, b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (generate with -update)", err)
			}
			want, err := parseHex(string(text))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if string(b) != string(want) {
				t.Fatalf("%v encodes to\n%s\n%s holds\n%s", g.f, formatHex(g.f, b), path, text)
			}
			got, err := decodeAll(t, want, 1024)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], g.f) {
				t.Fatalf("%s decodes to %v, want %v", path, got, g.f)
			}
		})
	}
}

func formatHex(f frame, b []byte) []byte {
	var s strings.Builder
	fmt.Fprintf(&s, "# %v\n", f)
	for len(b) > 0 {
		n := min(16, len(b))
		for i, c := range b[:n] {
			if i > 0 {
				s.WriteByte(' ')
			}
			fmt.Fprintf(&s, "%02x", c)
		}
		s.WriteByte('\n')
		b = b[n:]
	}
	return []byte(s.String())
}

// parseHex reads formatHex's output: lines starting with # are comments,
// the rest hex bytes separated by spaces.
func parseHex(text string) ([]byte, error) {
	var out []byte
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		out = append(out, b...)
	}
	return out, nil
}
