package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tinyBinary builds a static hello-world into dir, as scripts/image builds
// weir.
func tinyBinary(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tiny")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building a tiny binary: %v\n%s", err, out)
	}
	return bin
}

// TestImageReadBack builds an image of a tiny static binary, writes it as
// scripts/image does and reads it back with go-containerregistry's tarball
// reader: the tag, the config (entrypoint, user, /tmp, platform, time) and
// the layer's files, with the binary's bytes, are what the manifests of
// deploy/kubernetes expect.
func TestImageReadBack(t *testing.T) {
	dir := t.TempDir()
	bin := tinyBinary(t, dir)
	certs := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	img, err := build(options{Binary: bin, CACerts: certs, OS: "linux", Arch: runtime.GOARCH, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "weir-image.tar")
	if err := write(img, "weir:dev", out); err != nil {
		t.Fatal(err)
	}

	// The tarball's manifest.json names the tag docker load gives it.
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{"weir:dev"}) {
		t.Fatalf("manifest.json: got %+v, want one image tagged weir:dev", m)
	}
	tag, _ := name.NewTag("weir:dev")
	back, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	switch {
	case !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/weir"}):
		t.Errorf("entrypoint %q, want /usr/local/bin/weir", c.Entrypoint)
	case c.User != "65532:65532":
		t.Errorf("user %q, want 65532:65532 (the manifests' runAsUser)", c.User)
	case c.WorkingDir != "/tmp" || len(c.Volumes) != 1:
		t.Errorf("working dir %q, volumes %v: want /tmp, the one writable place", c.WorkingDir, c.Volumes)
	case !slices.Contains(c.Env, "PATH=/usr/local/bin"):
		t.Errorf("env %q: want weir on PATH (kubectl exec ... -- weir)", c.Env)
	case cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(created):
		t.Errorf("platform %s/%s created %v, want linux/%s %v", cf.OS, cf.Architecture, cf.Created.Time, runtime.GOARCH, created)
	}
	if _, ok := c.Volumes["/tmp"]; !ok {
		t.Errorf("volumes %v: want /tmp", c.Volumes)
	}

	layers, err := back.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want := map[string]int64{"etc/": 0o755, "etc/group": 0o644, "etc/nsswitch.conf": 0o644, "etc/passwd": 0o644,
		"etc/ssl/": 0o755, "etc/ssl/certs/": 0o755, "etc/ssl/certs/ca-certificates.crt": 0o644,
		"tmp/": 0o1777, "usr/": 0o755, "usr/local/": 0o755, "usr/local/bin/": 0o755, "usr/local/bin/weir": 0o755}
	var got []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name)
		if mode, ok := want[h.Name]; !ok || h.Mode != mode || h.Uid != 0 || !h.ModTime.Equal(created) {
			t.Errorf("layer file %s: mode %o uid %d time %v; want mode %o uid 0 time %v", h.Name, h.Mode, h.Uid, h.ModTime, mode, created)
		}
		data, _ := io.ReadAll(tr)
		switch h.Name {
		case "usr/local/bin/weir":
			if b, _ := os.ReadFile(bin); !bytes.Equal(data, b) {
				t.Errorf("usr/local/bin/weir: %d bytes, not the binary's %d", len(data), len(b))
			}
		case "etc/passwd":
			if !strings.Contains(string(data), "weir:x:65532:65532:") {
				t.Errorf("etc/passwd %q: want the user 65532", data)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("layer files %q, want %d: %v", got, len(want), want)
	}

	// The same binary and time give the same image: rebuilding changes nothing.
	again, err := build(options{Binary: bin, CACerts: certs, OS: "linux", Arch: runtime.GOARCH, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("digests %s and %s of the same build differ", d1, d2)
	}
	// What docker load reads is what was built: the config and the layer.
	c1, _ := img.ConfigName()
	c2, _ := back.ConfigName()
	l1, _ := img.Layers()
	dl1, _ := l1[0].DiffID()
	dl2, _ := layers[0].DiffID()
	if c1 != c2 || dl1 != dl2 {
		t.Errorf("read back: config %s and layer %s, built: %s and %s", c2, dl2, c1, dl1)
	}
}

// TestImageRefusesNonStatic: a file that is not an executable for the
// image's platform, or one that needs a dynamic loader, is refused, since
// the image has no C library.
func TestImageRefusesNonStatic(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "weir")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := build(options{Binary: script, OS: "linux", Arch: runtime.GOARCH}); err == nil || !strings.Contains(err.Error(), "not an ELF executable") {
		t.Errorf("a shell script: got %v, want not an ELF executable", err)
	}
	bin := tinyBinary(t, dir)
	other := map[string]string{"amd64": "arm64"}[runtime.GOARCH]
	if other == "" {
		other = "amd64"
	}
	if _, err := build(options{Binary: bin, OS: "linux", Arch: other}); err == nil || !strings.Contains(err.Error(), "not one for --arch "+other) {
		t.Errorf("a binary of another architecture: got %v, want refused", err)
	}
	// A dynamically linked executable of this machine, if it has one.
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		if f, err := elf.Open(p); err == nil {
			dynamic := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
			f.Close()
			if !dynamic {
				continue
			}
			if _, err := build(options{Binary: p, OS: "linux", Arch: runtime.GOARCH}); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
				t.Errorf("%s, linked dynamically: got %v, want refused naming CGO_ENABLED=0", p, err)
			}
			return
		}
	}
	t.Log("no dynamically linked executable on this machine: that case is not run")
}
