package storage

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// location is a parsed store URL.
type location struct {
	scheme string // "file", "mem", "s3", or another registered scheme
	host   string // bucket (s3) or name (mem); empty for file
	// path is, for file, the absolute directory of the root (an OS path) and,
	// for other schemes, the key prefix of the root inside the bucket without
	// leading or trailing "/" ("" for the bucket's top).
	path     string
	rawQuery string // driver options (s3), kept as given
}

// parseLocation parses a store URL or a plain path (meaning file).
func parseLocation(raw string) (location, error) {
	if raw == "" {
		return location{}, fmt.Errorf("empty URL")
	}
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return location{}, fmt.Errorf("cannot make %q absolute: %w", raw, err)
		}
		return location{scheme: "file", path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, err
	}
	l := location{scheme: u.Scheme, host: u.Host, rawQuery: u.RawQuery}
	if u.User != nil || u.Fragment != "" {
		return location{}, fmt.Errorf("user info and fragments are not supported")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return location{}, fmt.Errorf("file URL has host %q: want file:///absolute/path, or a plain path", u.Host)
		}
		if u.RawQuery != "" {
			return location{}, fmt.Errorf("file URLs take no query parameters")
		}
		if !strings.HasPrefix(u.Path, "/") {
			return location{}, fmt.Errorf("file URL needs an absolute path: file:///absolute/path")
		}
		l.host, l.path = "", filepath.Clean(filepath.FromSlash(u.Path))
		return l, nil
	case "mem":
		if u.RawQuery != "" {
			return location{}, fmt.Errorf("mem URLs take no query parameters")
		}
	}
	if u.Host == "" {
		return location{}, fmt.Errorf("missing %s name: want %s://name[/prefix]", bucketWord(u.Scheme), u.Scheme)
	}
	l.path = strings.Trim(u.Path, "/")
	if l.path != "" {
		if err := checkKey(l.path); err != nil {
			return location{}, fmt.Errorf("bad prefix: %w", err)
		}
	}
	return l, nil
}

func bucketWord(scheme string) string {
	if scheme == "mem" {
		return "store"
	}
	return "bucket"
}

// String returns the canonical URL of l.
func (l location) String() string {
	u := url.URL{Scheme: l.scheme, Host: l.host, RawQuery: l.rawQuery}
	if l.scheme == "file" {
		u.Path = filepath.ToSlash(l.path)
		return u.String()
	}
	if l.path != "" {
		u.Path = "/" + l.path
	}
	return u.String()
}

// elements returns the "/"-separated elements of l's path (below the bucket).
func (l location) elements() []string {
	p := l.path
	if l.scheme == "file" {
		p = strings.Trim(filepath.ToSlash(p), "/")
	}
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// withElements returns l with its path replaced by elems.
func (l location) withElements(elems []string) location {
	p := strings.Join(elems, "/")
	if l.scheme == "file" {
		p = filepath.FromSlash("/" + p)
	}
	l.path = p
	return l
}
