package rest

import (
	"crypto/rand"
	"encoding/hex"
)

// JobIDLen is the length of a job id: 32 lowercase hex characters (16 random
// bytes), the format of Flink's JobID.
const JobIDLen = 32

// NewJobID returns a fresh random job id from crypto/rand.
func NewJobID() string {
	var b [JobIDLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+); it crashes instead
	return hex.EncodeToString(b[:])
}

// ValidJobID reports whether s is a well-formed job id: exactly 32 characters,
// each 0-9 or a-f. Uppercase is rejected, so every id has one spelling.
func ValidJobID(s string) bool {
	if len(s) != JobIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
