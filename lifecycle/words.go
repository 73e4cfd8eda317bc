package lifecycle

// Word reads for the comparisons and hashes that go through strings a word
// at a time (the mirrored conditions' types, the fleet join's providerIDs).

// word64 reads s's first 8 bytes little-endian (the compiler makes it one
// load); s holds at least 8.
func word64(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// word32 reads s's first 4 bytes little-endian (one load); s holds at least
// 4.
func word32(s string) uint32 {
	s = s[:4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}
