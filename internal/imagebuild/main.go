package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

// usage is the command's help.
const usage = `Usage: go run ./internal/imagebuild --binary PATH [--tag weir:dev] [--out FILE]
       [--arch GOARCH] [--ca-certs PATH]
Writes the container image of a static weir binary to FILE (default
weir-image.tar) as a tarball for docker load, kind load image-archive or
crane push. The files' time is $SOURCE_DATE_EPOCH (seconds; default 0).
scripts/image builds the binary and runs this.
`

func main() {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	var o options
	fs.StringVar(&o.Binary, "binary", "", "")
	fs.StringVar(&o.Arch, "arch", runtime.GOARCH, "")
	fs.StringVar(&o.CACerts, "ca-certs", "", "")
	tag := fs.String("tag", "weir:dev", "")
	out := fs.String("out", "weir-image.tar", "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if o.Binary == "" || fs.NArg() != 0 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	o.OS = "linux"
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "imagebuild: SOURCE_DATE_EPOCH %q: want seconds since 1970\n", s)
			os.Exit(2)
		}
		o.Created = time.Unix(sec, 0)
	} else {
		o.Created = time.Unix(0, 0)
	}
	img, err := build(o)
	if err == nil {
		err = write(img, *tag, *out)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "imagebuild: %v\n", err)
		os.Exit(1)
	}
	d, _ := img.Digest()
	fmt.Printf("%s: image %s (%s), %s\n", *out, *tag, o.Arch, d)
}
