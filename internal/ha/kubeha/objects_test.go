package kubeha

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/ha"
	"github.com/weirhq/weir/internal/testseed"
)

// configMapKey is Kubernetes' rule for ConfigMap keys
// (IsConfigMapKey: at most 253 bytes of [-._a-zA-Z0-9], not "." or "..").
var configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]{1,253}$`)

func TestEncodeKey(t *testing.T) {
	for key, want := range map[string]string{
		"checkpoints/j-1/latest": "checkpoints.j-1.latest",
		"jobs/a.b_c":             "jobs.a_.b__c",
		".":                      "_.",
		"..":                     "_._.",
		"_/_":                    "__.__",
	} {
		got, err := encodeKey(key)
		if err != nil || got != want {
			t.Errorf("encodeKey(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	// Random valid store keys: each encodes to a valid ConfigMap key that
	// decodes back to it, and no two keys share an encoding.
	r := testseed.Rand(t, 0)
	const alphabet = "ab_./-Z9"
	seen := map[string]string{}
	for range 20000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		key := string(b)
		if ha.CheckKey(key) != nil {
			continue
		}
		enc, err := encodeKey(key)
		if err != nil {
			t.Fatalf("encodeKey(%q): %v", key, err)
		}
		if !configMapKey.MatchString(enc) || enc == "." || enc == ".." {
			t.Fatalf("encodeKey(%q) = %q, not a valid ConfigMap key", key, enc)
		}
		if dec, ok := decodeKey(enc); !ok || dec != key {
			t.Fatalf("decodeKey(encodeKey(%q) = %q) = %q, %v", key, enc, dec, ok)
		}
		if other, dup := seen[enc]; dup && other != key {
			t.Fatalf("keys %q and %q both encode to %q", key, other, enc)
		}
		seen[enc] = key
	}
	// A key of 200 dots is a valid store key whose encoding is too long.
	if _, err := encodeKey(strings.Repeat(".", 200)); err == nil || !strings.Contains(err.Error(), "253") {
		t.Fatalf("encodeKey of 200 dots: %v, want an error naming Kubernetes' 253", err)
	}
	// Keys another writer put in the ConfigMap, which encodeKey never makes.
	for _, enc := range []string{"a_", "a_b", "_x"} {
		if dec, ok := decodeKey(enc); ok {
			t.Errorf("decodeKey(%q) = %q, want not ok", enc, dec)
		}
	}
}

func TestLeaseSecondsRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int32{time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, 2 * time.Second: 2, 6 * time.Second: 6} {
		if got := *leaseSeconds(d); got != want {
			t.Errorf("leaseSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestMicroTime(t *testing.T) {
	at := time.Date(2026, 12, 7, 1, 2, 3, 456789123, time.FixedZone("x", 3600))
	if got, want := *microTime(at), "2026-12-07T00:02:03.456789Z"; got != want {
		t.Fatalf("microTime = %q, want %q", got, want)
	}
}
