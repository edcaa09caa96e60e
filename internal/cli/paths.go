package cli

import (
	"os"
	"path/filepath"
	"strings"
)

// pathFlag is a path given by a flag, for messages.
type pathFlag struct{ flag, path string }

// checkNotInput refuses an output that is one of the inputs, lies inside an
// input directory or holds an input: the job would overwrite what it reads,
// or read what it writes. Paths are compared after filepath.Abs and
// EvalSymlinks (of the longest part that exists), and by os.SameFile when
// both exist (hard links, bind mounts). "-" (standard input or output),
// URLs and empty paths are not compared.
func checkNotInput(inputs []pathFlag, outputs ...pathFlag) error {
	for _, out := range outputs {
		if !comparable(out.path) {
			continue
		}
		o := resolvePath(out.path)
		for _, in := range inputs {
			if !comparable(in.path) {
				continue
			}
			i := resolvePath(in.path)
			switch {
			case o == i || sameFile(in.path, out.path):
				return usagef("--%s %s is the input (--%s %s): the job would overwrite what it reads; write elsewhere", out.flag, out.path, in.flag, in.path)
			case within(o, i):
				return usagef("--%s %s is inside the input directory (--%s %s): the job would read what it writes; write elsewhere", out.flag, out.path, in.flag, in.path)
			case within(i, o):
				return usagef("--%s %s is inside the output (--%s %s): the job would write over what it reads; write elsewhere", in.flag, in.path, out.flag, out.path)
			}
		}
	}
	return nil
}

func comparable(p string) bool { return p != "" && p != "-" && !strings.Contains(p, "://") }

// resolvePath returns p absolute, with the symbolic links of its longest
// existing prefix resolved.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	dir, rest := abs, ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// within tells whether path p lies inside directory dir (both clean and
// absolute).
func within(p, dir string) bool {
	if dir == string(filepath.Separator) {
		return p != dir
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// checkJobPaths refuses outputs of weir run that would silently go wrong:
// an output that is an input (checkNotInput), and standard output where the
// job writes a directory of part files (keyed-count; window-agg with
// checkpoints), which would become a directory named "-".
func checkJobPaths(job string, f *jobFlags) error {
	dirs := job == "keyed-count" || job == "window-agg" && f.checkpointDir != ""
	outs := []pathFlag{{"output", f.output}, {"late-output", f.lateOutput}, {"dead-letter", f.bad.deadLetter}}
	for _, o := range outs {
		if dirs && o.path == "-" {
			why := "keyed-count writes a directory of part files, committed exactly once"
			if job == "window-agg" {
				why = "with --checkpoint-dir, window-agg writes directories of part files, committed exactly once"
			}
			return usagef("--%s -: %s, not standard output; give a directory", o.flag, why)
		}
	}
	if comparable(f.output) && comparable(f.lateOutput) && resolvePath(f.output) == resolvePath(f.lateOutput) {
		return usagef("--late-output %s and --output %s are the same path; they must differ", f.lateOutput, f.output)
	}
	return checkNotInput([]pathFlag{{"input", f.input}}, outs...)
}
