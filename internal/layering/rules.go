package layering

import (
	"fmt"
	"sort"
	"strings"
)

// Graph is an import graph: package path -> the packages it imports
// directly. Std marks the standard library's packages.
type Graph struct {
	Imports map[string][]string
	Std     map[string]bool
}

// Rule forbids the packages matched by From to depend on the packages
// matched by Forbid, directly (Direct) or through any path. A pattern is a
// package path; a trailing "/..." matches the path and everything below it.
type Rule struct {
	Name string
	// Why is the reason, printed with a violation.
	Why  string
	From []string
	// Forbid lists forbidden patterns; StdOnly forbids every package that
	// is not in the standard library (besides From's own packages).
	Forbid  []string
	StdOnly bool
	// Allow exempts patterns from Forbid (a connector's own internal
	// test driver, say).
	Allow  []string
	Direct bool
}

// Violation is one forbidden dependency, with the import path that brings
// it in, From first.
type Violation struct {
	Rule string
	Why  string
	Path []string
}

func (v Violation) String() string {
	return fmt.Sprintf("rule %q broken: %s\n    (%s)", v.Rule, strings.Join(v.Path, " imports "), v.Why)
}

// Match reports whether path matches pattern.
func Match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if Match(p, path) {
			return true
		}
	}
	return false
}

// Check returns every package matched by a rule's From that reaches a
// forbidden package, with the shortest import path to the first forbidden
// package found, in a deterministic order.
func Check(g Graph, rules []Rule) []Violation {
	var roots []string
	for p := range g.Imports {
		roots = append(roots, p)
	}
	sort.Strings(roots)
	var out []Violation
	for _, r := range rules {
		for _, root := range roots {
			if !matchAny(r.From, root) {
				continue
			}
			if path := firstForbidden(g, r, root); path != nil {
				out = append(out, Violation{Rule: r.Name, Why: r.Why, Path: path})
			}
		}
	}
	return out
}

func (r Rule) forbids(g Graph, p string) bool {
	if matchAny(r.Allow, p) {
		return false
	}
	if r.StdOnly && !g.Std[p] && !matchAny(r.From, p) {
		return true
	}
	return matchAny(r.Forbid, p)
}

// firstForbidden searches breadth-first from root, imports in sorted order,
// so the path reported is a shortest one and the same on every run.
func firstForbidden(g Graph, r Rule, root string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		imps := append([]string(nil), g.Imports[p]...)
		sort.Strings(imps)
		for _, q := range imps {
			if _, seen := prev[q]; seen {
				continue
			}
			prev[q] = p
			if r.forbids(g, q) {
				var path []string
				for x := q; x != ""; x = prev[x] {
					path = append([]string{x}, path...)
				}
				return path
			}
			if !r.Direct {
				queue = append(queue, q)
			}
		}
	}
	return nil
}
