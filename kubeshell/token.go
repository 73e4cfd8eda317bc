package kubeshell

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// TokenIDOf returns the n-th bootstrap token ID derived from a machine's
// UID: 6 base-36 digits of the SHA-256 hash of the UID (and of n, after
// the first). Two machines share their first ID with a chance of about one
// in 2 billion; a controller that finds its ID taken by another machine's
// token takes the next n. Unlike MCM's ID, derived from the last bytes of
// the machine's name, it is not shared by names that end alike.
func TokenIDOf(uid string, n int) string {
	in := uid
	if n > 0 {
		in += "/" + strconv.Itoa(n)
	}
	h := sha256.Sum256([]byte(in))
	v := binary.BigEndian.Uint64(h[:8])
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	var id [6]byte
	for i := range id {
		id[i] = digits[v%36]
		v /= 36
	}
	return string(id[:])
}
