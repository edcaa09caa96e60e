// Package layering owns the rules of what may import what in Weir, and the
// check of them over the real import graph (`go list -deps`). The rules are
// the layering of docs/architecture.md ("Layers and the rules between
// them"); a rule is broken by one import anywhere on a path, and the check
// names that path, so the message says which import to remove.
//
// The checker is pure (a graph and rules in, violations out) and tested on
// small graphs; TestRules runs it over the module.
package layering
