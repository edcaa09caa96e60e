package state

// IntMapSpecialKey is the user key an integer-keyed heap map state keeps
// beside its table (see intFlip).
const IntMapSpecialKey = int64(intFlip)
