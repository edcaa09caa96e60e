package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// usageError is a mistake in the command line: exit code 2, with usage.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errHelp asks for the usage text and exit code 0.
var errHelp = errors.New("help requested")

// newFlagSet returns a flag set that reports errors instead of printing them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.Usage = func() {}
	return fs
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// parseArgs parses flags and positional arguments in any order. A flag
// given by an alias counts as given by its name (see alias). A string flag
// given an empty value is a usage error naming it: an empty path or name
// never silently means the default (optionalString is the exception).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usageError{flagMessage(err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if err := refuseEmpty(fs); err != nil {
		return nil, err
	}
	if err := resolveAliases(fs); err != nil {
		return nil, err
	}
	return pos, nil
}

// refuseEmpty fails when a string flag was given an empty (or blank) value.
func refuseEmpty(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		if v, ok := g.Get().(string); ok && strings.TrimSpace(v) == "" {
			err = usagef("--%s is empty: give it a value, or leave it out", f.Name)
		}
	})
	return err
}

// optionalString is a string flag whose empty value means something (run's
// --address "": no REST API), so parseArgs accepts it.
type optionalString struct{ p *string }

func (o optionalString) String() string {
	if o.p == nil {
		return ""
	}
	return *o.p
}

func (o optionalString) Set(v string) error { *o.p = v; return nil }

// aliasOf starts the usage string of a flag that is an old name of another.
const aliasOf = "alias of --"

// alias makes old another name of the flag name (defined already): both set
// the same value, and after parseArgs the flag counts as given by name
// (setFlag, setFlags and onlyFlags see name; messages can say what was
// typed with typed).
func alias(fs *flag.FlagSet, old, name string) {
	fs.Var(fs.Lookup(name).Value, old, aliasOf+name)
}

// resolveAliases marks each flag given by an alias as given by its name,
// and refuses both names at once.
func resolveAliases(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		name, ok := strings.CutPrefix(f.Usage, aliasOf)
		if !ok || err != nil {
			return
		}
		if setFlag(fs, name) {
			err = usagef("give --%s or its alias --%s, not both", name, f.Name)
			return
		}
		err = fs.Set(name, f.Value.String())
	})
	return err
}

// typed returns the name the command line gave flag name by: an alias of
// it, or name.
func typed(fs *flag.FlagSet, name string) string {
	by := name
	fs.Visit(func(f *flag.Flag) {
		if f.Usage == aliasOf+name {
			by = f.Name
		}
	})
	return by
}

// flagMessage rewrites the flag package's messages to name flags as users
// type them ("--rate", not "-rate").
func flagMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"flag provided but not defined: -", "flag needs an argument: -"} {
		if strings.HasPrefix(msg, p) {
			name := strings.TrimPrefix(strings.TrimPrefix(msg, p), "-")
			if p[5] == 'p' {
				return fmt.Sprintf("unknown flag --%s", name)
			}
			return fmt.Sprintf("flag --%s needs a value", name)
		}
	}
	// `invalid value "x" for flag -parallelism: parse error`
	if i := strings.Index(msg, " for flag -"); i >= 0 && strings.HasPrefix(msg, "invalid value ") {
		rest := msg[i+len(" for flag -"):]
		name, why, _ := strings.Cut(rest, ": ")
		why = strings.TrimPrefix(why, "parse error")
		if why == "" {
			why = "not a valid value"
		}
		return fmt.Sprintf("--%s %s: %s", name, strings.TrimPrefix(msg[:i], "invalid value "), strings.TrimSpace(why))
	}
	return msg
}

// setFlags returns the names of the flags given on the command line (an
// alias counts as its flag's name).
func setFlags(fs *flag.FlagSet) []string {
	var names []string
	fs.Visit(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, aliasOf) {
			names = append(names, f.Name)
		}
	})
	return names
}

// onlyFlags fails when a flag was given that the command (or job) does not take.
func onlyFlags(fs *flag.FlagSet, what string, allowed ...string) error {
	for _, n := range setFlags(fs) {
		if !slices.Contains(allowed, n) {
			return usagef("--%s does not apply to %s", typed(fs, n), what)
		}
	}
	return nil
}

// maxParallelism is the most subtasks an operator may have (Flink's upper
// bound of the maximum parallelism, and the number of key groups).
const maxParallelism = 32768

func checkParallelism(name string, p int) error {
	if p < 1 || p > maxParallelism {
		return usagef("--%s must be between 1 and %d, got %d", name, maxParallelism, p)
	}
	return nil
}

func checkDuration(name string, d time.Duration) error {
	if d < 0 {
		return usagef("--%s must not be negative, got %v", name, d)
	}
	return nil
}

// clientURL turns the address of a cluster's REST API, given by flag name,
// into the client's base URL: HOST:PORT, or http://HOST:PORT as weir run
// prints it, or https://HOST:PORT (a REST API behind a TLS proxy; Weir's
// own serves plain HTTP); a trailing slash is fine.
func clientURL(name, addr string) (string, error) {
	scheme, hostPort := "http", addr
	if i := strings.Index(addr, "://"); i >= 0 {
		scheme, hostPort = strings.ToLower(addr[:i]), addr[i+3:]
		if scheme != "http" && scheme != "https" {
			return "", usagef("--%s %q: want HOST:PORT or http://HOST:PORT (not %s://)", name, addr, scheme)
		}
	}
	hostPort = strings.TrimRight(hostPort, "/")
	if strings.ContainsAny(hostPort, "/?#@") {
		return "", usagef("--%s %q: want HOST:PORT or http://HOST:PORT, without a path", name, addr)
	}
	if err := checkAddress(name, hostPort); err != nil {
		return "", err
	}
	return scheme + "://" + hostPort, nil
}

// listenAddress turns where weir run's REST API listens, given by flag
// name, into HOST:PORT: it takes HOST:PORT or http://HOST:PORT (the form
// weir run prints), with or without a trailing slash.
func listenAddress(name, addr string) (string, error) {
	base, err := clientURL(name, addr)
	if err != nil {
		return "", err
	}
	hostPort, ok := strings.CutPrefix(base, "http://")
	if !ok {
		return "", usagef("--%s %q: weir run's REST API serves plain HTTP; want HOST:PORT or http://HOST:PORT", name, addr)
	}
	return hostPort, nil
}

// checkAddress accepts host:port with a numeric port 0..65535.
func checkAddress(name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--%s %q: want HOST:PORT (for example 127.0.0.1:8081)", name, addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return usagef("--%s %q: the port must be a number from 0 to 65535", name, addr)
	}
	_ = host
	return nil
}

// sizeFlag is a byte size flag: 32768, 32kb, 64m, 4gb, 1.5GiB (binary
// units, as Flink's memory settings).
type sizeFlag struct{ bytes int64 }

func (s *sizeFlag) String() string { return strconv.FormatInt(s.bytes, 10) }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	s.bytes = n
	return nil
}

func parseSize(v string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(v))
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || math.IsNaN(f) || f < 0 {
		return 0, fmt.Errorf("want a size such as 64mb or 4gb")
	}
	b := f * mult
	if b >= 1<<62 {
		return 0, fmt.Errorf("too large")
	}
	return int64(b), nil
}

// startCPUProfile starts a CPU profile of the process into path (nothing
// when path is empty) and returns what stops it and closes the file. cmd
// names the command in errors.
func startCPUProfile(cmd, path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: --cpuprofile: %w", cmd, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: --cpuprofile: %w", cmd, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}
