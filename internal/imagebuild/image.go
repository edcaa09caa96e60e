package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, its one writable directory and where weir lies.
const (
	uid        = 65532
	binaryPath = "/usr/local/bin/weir"
	tmpDir     = "/tmp"
)

// options say what goes into the image.
type options struct {
	// Binary is the path of a static weir binary (CGO_ENABLED=0).
	Binary string
	// CACerts is the path of a CA bundle copied to
	// /etc/ssl/certs/ca-certificates.crt (TLS to an object store); "" for none.
	CACerts string
	// OS and Arch are the binary's GOOS and GOARCH.
	OS, Arch string
	// Created is the time of the image and of its files.
	Created time.Time
}

// checkStatic refuses a file that is not an ELF executable of arch, or one
// linked dynamically: the image has no C library.
func checkStatic(p, arch string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable (%v): build it with GOOS=linux", p, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
		"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "loong64": elf.EM_LOONGARCH}
	if m, ok := want[arch]; !ok || f.Machine != m {
		return fmt.Errorf("%s: a %v executable, not one for --arch %s", p, f.Machine, arch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is linked dynamically (it names an interpreter): build it with CGO_ENABLED=0", p)
		}
	}
	return nil
}

// file is one entry of the layer.
type file struct {
	name string // without a leading /
	mode int64  // permissions, with the sticky bit for /tmp
	uid  int
	dir  bool
	data []byte
}

// layerFiles are the image's files: the binary, a passwd and group naming
// the user, the CA bundle if any, and /tmp.
func layerFiles(o options) ([]file, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nweir:x:%d:\n", uid)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nweir:x:%d:%d:weir:%s:/sbin/nologin\n", uid, uid, tmpDir)},
	}
	if o.CACerts != "" {
		certs, err := os.ReadFile(o.CACerts)
		if err != nil {
			return nil, fmt.Errorf("--ca-certs: %w", err)
		}
		files = append(files, file{name: "etc/ssl/", mode: 0o755, dir: true}, file{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: certs})
	}
	return append(files,
		file{name: "tmp/", mode: 0o1777, dir: true},
		file{name: "usr/", mode: 0o755, dir: true},
		file{name: "usr/local/", mode: 0o755, dir: true},
		file{name: "usr/local/bin/", mode: 0o755, dir: true},
		file{name: binaryPath[1:], mode: 0o755, data: bin},
	), nil
}

// layerTar writes files as a tar stream, every entry at time t.
func layerTar(files []file, t time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: t, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// build makes the image.
func build(o options) (v1.Image, error) {
	if err := checkStatic(o.Binary, o.Arch); err != nil {
		return nil, err
	}
	files, err := layerFiles(o)
	if err != nil {
		return nil, err
	}
	t := o.Created.UTC()
	data, err := layerTar(files, t)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: t}, CreatedBy: "internal/imagebuild: " + path.Base(o.Binary) + " as " + binaryPath}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = o.OS, o.Arch, v1.Time{Time: t}
	cf.Config = v1.Config{
		Entrypoint:   []string{binaryPath},
		User:         fmt.Sprintf("%d:%d", uid, uid),
		Env:          []string{"PATH=" + path.Dir(binaryPath), "TMPDIR=" + tmpDir, "HOME=" + tmpDir},
		WorkingDir:   tmpDir,
		Volumes:      map[string]struct{}{tmpDir: {}},
		ExposedPorts: map[string]struct{}{"6121/tcp": {}, "6123/tcp": {}, "8081/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "weir",
			"org.opencontainers.image.description": "Weir, a stream processor in the family of Apache Flink: weir jobmanager, weir taskmanager, weir run",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// write writes img as a tarball of the docker save format under tag.
func write(img v1.Image, tag, out string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", tag, err)
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", out, err), os.Remove(out))
	}
	return nil
}
