// Package testseed gives randomized tests their seed: WEIR_SEED when set
// (to reproduce a failure), else a fresh random one, logged either way;
// and Fill, random values of any message type drawn from such a seed.
package testseed
