package lifecycle

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDetail bounds the detail of a LastOperation, in bytes: what a
// provider's error or a list of metadata keys adds to its description. A
// detail is written into the machine's status with every save; unbounded,
// one provider message or a patch of many keys would push the object over
// the API server's size limit.
const MaxDetail = 1024

// boundDetail returns s cut to at most MaxDetail bytes, at a character
// boundary, ending with how many bytes were left out. It allocates only
// when it cuts.
func boundDetail(s string) string {
	if len(s) <= MaxDetail {
		return s
	}
	return cutDetail(s)
}

// cutDetail is boundDetail of a detail longer than MaxDetail.
func cutDetail(s string) string {
	const room = MaxDetail - len(" … (18446744073709551615 bytes more)")
	cut := room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " … (" + strconv.Itoa(len(s)-cut) + " bytes more)"
}

// keyList joins sorted keys with ", ", within MaxDetail bytes: the first
// keys that fit, then "and N more".
func keyList(keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		// Room for this key and, should a later one not fit, the tail.
		if b.Len()+len(sep)+len(k)+len(", and 99999999999 more") > MaxDetail {
			if i == 0 {
				return boundDetail(k)
			}
			b.WriteString(", and " + strconv.Itoa(len(keys)-i) + " more")
			return b.String()
		}
		b.WriteString(sep)
		b.WriteString(k)
	}
	return b.String()
}
