// Package testseed gives randomized tests their seed: WEIR_SEED when set
// (to reproduce a failure), else a fresh random one, logged either way.
package testseed
